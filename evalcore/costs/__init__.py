"""What model calls cost: the price table (default and the operator's), tokens by role priced, totals."""

from evalcore.costs.prices import Price, PriceTable, price_table
from evalcore.costs.usage import (
    GENERATOR,
    QUERY,
    RERANK,
    Cost,
    Usage,
    by_role,
    cost_line,
    money,
    priced,
    role_name,
    summed,
)

__all__ = ["GENERATOR", "QUERY", "RERANK", "Cost", "Price", "PriceTable", "Usage", "by_role", "cost_line", "money",
           "price_table", "priced", "role_name", "summed"]
