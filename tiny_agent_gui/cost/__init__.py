"""The cost view (SPEC §4, §7): sessions, models, days and weeks, side by side with what-if estimates, charts of
cost per day by model and per session or model (QPainter), CSV export."""

from tiny_agent_gui.cost.chart import Bar, CostBarChart, DailyCostChart, Day, DaySegment
from tiny_agent_gui.cost.models import ComparisonModel, CostRowsModel, model_model, period_model, session_model
from tiny_agent_gui.cost.view import CostView

__all__ = [
    "Bar",
    "ComparisonModel",
    "CostBarChart",
    "CostRowsModel",
    "CostView",
    "DailyCostChart",
    "Day",
    "DaySegment",
    "model_model",
    "period_model",
    "session_model",
]
