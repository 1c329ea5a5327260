"""progress-sql: multi-turn reinforcement learning for Text-to-SQL with progressive rewards.

The package implements the Progress-SQL paper's Oracle-guided Diagnostic Tree (ODT), its progressive
reward, a multi-turn refinement environment, a safe SQL executor and an evaluation harness.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
