"""The three-turn case study of the Progress-SQL paper (Appendix G), used by ``progress-sql demo``.

The SQL is quoted from the paper (arXiv 2606.06825, Appendix G) for illustration.
"""

from __future__ import annotations

QUESTION = (
    "Highly-rated suppliers refer to those who have received a rating of 4 or higher from customers. "
    "What are the names and average prices of contact lenses for highly-rated suppliers who have sold "
    "at least one lens?"
)

GOLD_SQL = (
    "SELECT s.supplier_name, AVG(cl.price) AS average_price FROM contact_lenses cl "
    "JOIN suppliers s ON s.supplier_id = cl.supplier_id JOIN feedback f ON cl.lens_id = f.lens_id "
    "WHERE f.rating >= 4 GROUP BY s.supplier_name HAVING COUNT(cl.lens_id) > 0;"
)

TURNS: tuple[str, ...] = (
    "SELECT t1.lens_name, AVG(t1.price) AS average_price FROM contact_lenses t1 "
    "JOIN suppliers t2 ON t1.supplier_id = t2.supplier_id JOIN feedback t3 ON t1.lens_id = t3.lens_id "
    "JOIN order_items t4 ON t1.lens_id = t4.lens_id WHERE t3.rating >= 4 GROUP BY t1.lens_name "
    "HAVING COUNT(DISTINCT t4.order_item_id) > 0;",
    "SELECT s.supplier_name, AVG(cl.price) AS average_price FROM contact_lenses cl "
    "JOIN suppliers s ON cl.supplier_id = s.supplier_id JOIN feedback f ON cl.lens_id = f.lens_id "
    "JOIN order_items oi ON cl.lens_id = oi.lens_id JOIN sales sa ON oi.order_item_id = sa.order_id "
    "WHERE f.rating >= 4 GROUP BY s.supplier_name;",
    "SELECT s.supplier_name, AVG(cl.price) AS average_price FROM contact_lenses cl "
    "JOIN suppliers s ON cl.supplier_id = s.supplier_id JOIN feedback f ON cl.lens_id = f.lens_id "
    "WHERE f.rating >= 4 GROUP BY s.supplier_name HAVING COUNT(cl.lens_id) > 0;",
)
