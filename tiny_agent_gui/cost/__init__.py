"""The cost view (SPEC §4, §7): sessions and models side by side, a QPainter bar chart, CSV export."""

from tiny_agent_gui.cost.chart import Bar, CostBarChart
from tiny_agent_gui.cost.models import ComparisonModel, ModelCostModel, SessionCostModel
from tiny_agent_gui.cost.view import CostView

__all__ = ["Bar", "ComparisonModel", "CostBarChart", "CostView", "ModelCostModel", "SessionCostModel"]
