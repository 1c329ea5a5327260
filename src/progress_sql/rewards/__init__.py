"""Trajectory rewards: the paper's progressive reward and the peers' rewards."""
