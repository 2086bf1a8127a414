"""The settings dialog (providers and their keys, tool permissions, workspaces, price overrides) and its helpers."""

from tiny_agent_gui.settings.calls import FetchModels, ProviderCalls, TestConnection
from tiny_agent_gui.settings.dialog import SettingsDialog
from tiny_agent_gui.settings.folders import FolderChooser, choose_folder

__all__ = ["FetchModels", "FolderChooser", "ProviderCalls", "SettingsDialog", "TestConnection", "choose_folder"]
