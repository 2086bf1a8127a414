"""The Tools tab: standing "always allow" permissions — whole tools, command prefixes and path globs — (visible,
revocable), the extra folders file tools may reach,
whether ``bash``/``bg`` may use the network per workspace (and whether they are sandboxed at all), the step limit,
automatic compaction before a prompt (on or off, and from which share of the model's context window).

Permissions and folders are staged and applied to :class:`~tiny_agent_core.tools.approval.ToolSettings` by the
dialog's Save; the network choices, the step limit and automatic compaction are staged for
:class:`~tiny_agent_core.settings.AppSettings`.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from tiny_agent_core.agent.auto_compact import DEFAULT_PERCENT, PERCENT_RANGE
from tiny_agent_core.agent.loop import DEFAULT_MAX_STEPS
from tiny_agent_core.mcp.names import shown_name
from tiny_agent_core.settings import MAX_STEPS_LIMIT, AppSettings
from tiny_agent_core.tools.approval import ToolSettings
from tiny_agent_core.tools.sandbox import SandboxStatus, sandbox_status
from tiny_agent_core.tools.scopes import AllowRule
from tiny_agent_gui.settings.folders import FolderChooser

__all__ = ["ToolsPage"]


class ToolsPage(QWidget):
    """Staged revocations, allowed-root and network changes, the step limit, automatic compaction; ``workspaces``
    gives the folders to offer; ``sandbox`` says whether commands can be sandboxed here (probed once per process)."""

    def __init__(
        self,
        tool_settings: ToolSettings,
        workspaces: Callable[[], list[str]],
        chooser: FolderChooser,
        settings: AppSettings | None = None,
        sandbox: Callable[[], SandboxStatus] = sandbox_status,
    ) -> None:
        super().__init__()
        settings = settings if settings is not None else AppSettings()
        self._offline = set(settings.offline_workspaces)
        self._sandbox = sandbox()
        self._tool_settings = tool_settings
        self._workspaces = workspaces
        self._chooser = chooser
        tool_settings.reload()
        self._always = sorted(tool_settings.always_allowed())
        self._rules = list(tool_settings.allow_rules())
        self._roots = {workspace: list(roots) for workspace, roots in tool_settings.workspace_roots.items()}
        self._changed_roots: set[str] = set()

        self.always_list = QListWidget()
        self.always_list.setAccessibleName("Always allowed tools, command prefixes and paths")
        always_label = QLabel(
            "&Always allowed — whole tools, command prefixes and path globs (they never ask, except for a risky "
            "call; everything else asks before each call):"
        )
        always_label.setWordWrap(True)
        always_label.setBuddy(self.always_list)
        self.revoke_button = QPushButton("&Revoke")
        self.revoke_button.setAccessibleName("Revoke the selected permission")
        self.revoke_all_button = QPushButton("Revoke a&ll")
        self.revoke_all_button.setAccessibleName("Revoke all permissions")
        if tool_settings.load_error:
            always_label.setText(f"{always_label.text()}\n(The permissions file was unreadable: nothing is allowed.)")

        self.workspace_combo = QComboBox()
        self.workspace_combo.setAccessibleName("Workspace")
        workspace_label = QLabel("Wor&kspace:")
        workspace_label.setBuddy(self.workspace_combo)
        self.roots_list = QListWidget()
        self.roots_list.setAccessibleName("Extra folders file tools may reach")
        roots_label = QLabel("E&xtra folders the file tools may reach from this workspace (besides the workspace):")
        roots_label.setWordWrap(True)
        roots_label.setBuddy(self.roots_list)
        self.add_root_button = QPushButton("Add &folder…")
        self.add_root_button.setAccessibleName("Add an extra folder")
        self.remove_root_button = QPushButton("R&emove folder")
        self.remove_root_button.setAccessibleName("Remove the selected extra folder")
        self.network_check = QCheckBox("&Network for bash and bg commands in this workspace")
        self.network_check.setAccessibleName("Network for commands in this workspace")
        self.sandbox_label = QLabel(self._sandbox_text())
        self.sandbox_label.setWordWrap(True)
        self.sandbox_label.setAccessibleName("Command sandbox")
        self.steps_spin = QSpinBox()
        self.steps_spin.setRange(1, MAX_STEPS_LIMIT)
        self.steps_spin.setValue(settings.max_steps or DEFAULT_MAX_STEPS)
        self.steps_spin.setAccessibleName("Step limit per run")
        steps_label = QLabel("Stop a run and offer to continue after this many model &steps:")
        steps_label.setBuddy(self.steps_spin)
        self.compact_check = QCheckBox("Compact the session &before sending a prompt when the last request used")
        self.compact_check.setAccessibleName("Compact automatically before sending")
        self.compact_check.setChecked(settings.auto_compact is not None)
        self.compact_spin = QSpinBox()
        self.compact_spin.setRange(*PERCENT_RANGE)
        self.compact_spin.setSuffix(" %")
        self.compact_spin.setValue(settings.auto_compact or DEFAULT_PERCENT)
        self.compact_spin.setAccessibleName("Automatic compaction threshold, percent of the context window")
        self.compact_spin.setEnabled(self.compact_check.isChecked())
        compact_tail = QLabel("of the model's context window (when that window is known)")

        layout = QVBoxLayout(self)
        layout.addWidget(always_label)
        layout.addWidget(self.always_list, 1)
        row = QHBoxLayout()
        row.addWidget(self.revoke_button)
        row.addWidget(self.revoke_all_button)
        row.addStretch(1)
        layout.addLayout(row)
        picker = QHBoxLayout()
        picker.addWidget(workspace_label)
        picker.addWidget(self.workspace_combo, 1)
        layout.addLayout(picker)
        layout.addWidget(roots_label)
        layout.addWidget(self.roots_list, 1)
        row = QHBoxLayout()
        row.addWidget(self.add_root_button)
        row.addWidget(self.remove_root_button)
        row.addStretch(1)
        layout.addLayout(row)
        layout.addWidget(self.network_check)
        layout.addWidget(self.sandbox_label)
        row = QHBoxLayout()
        row.addWidget(steps_label)
        row.addWidget(self.steps_spin)
        row.addStretch(1)
        layout.addLayout(row)
        row = QHBoxLayout()
        row.addWidget(self.compact_check)
        row.addWidget(self.compact_spin)
        row.addWidget(compact_tail)
        row.addStretch(1)
        layout.addLayout(row)

        self.revoke_button.clicked.connect(self.revoke_selected)
        self.revoke_all_button.clicked.connect(self.revoke_all)
        self.workspace_combo.currentIndexChanged.connect(lambda _: self._show_roots())
        self.add_root_button.clicked.connect(self.add_root)
        self.remove_root_button.clicked.connect(self.remove_root)
        self.network_check.toggled.connect(self._network_toggled)
        self.compact_check.toggled.connect(self.compact_spin.setEnabled)
        self._show_always()
        self.refresh_workspaces()

    # -- permissions ---------------------------------------------------------------------------------------

    def always_allowed(self) -> list[str]:
        """The tools still always allowed as a whole after the staged revocations."""
        return list(self._always)

    def allow_rules(self) -> list[AllowRule]:
        """The command-prefix and path-glob rules still standing after the staged revocations."""
        return list(self._rules)

    def revoke_selected(self) -> None:
        """Revoke the selected standing permission, a whole tool or a rule (on save)."""
        item = self.always_list.currentItem()
        granted = item.data(Qt.ItemDataRole.UserRole) if item is not None else None
        if isinstance(granted, AllowRule) and granted in self._rules:
            self._rules.remove(granted)
        elif isinstance(granted, str) and granted in self._always:
            self._always.remove(granted)
        else:
            return
        row = self.always_list.currentRow()
        self._show_always()
        self.always_list.setCurrentRow(min(row, self.always_list.count() - 1))

    def revoke_all(self) -> None:
        """Revoke every standing permission, whole tools and rules (on save)."""
        self._always.clear()
        self._rules.clear()
        self._show_always()

    def _show_always(self) -> None:
        self.always_list.clear()
        for tool in self._always:
            shown = shown_name(tool)  # an MCP tool as mcp:<alias>/<tool>
            item = QListWidgetItem(shown)
            item.setData(Qt.ItemDataRole.UserRole, tool)
            item.setToolTip(f"Every {shown} call runs without asking, except a risky one")
            self.always_list.addItem(item)
        for rule in self._rules:
            item = QListWidgetItem(rule.describe())
            item.setData(Qt.ItemDataRole.UserRole, rule)
            item.setToolTip("Matching calls run without asking, except a risky one")
            self.always_list.addItem(item)
        granted = bool(self._always or self._rules)
        if granted:
            self.always_list.setCurrentRow(0)
        self.revoke_button.setEnabled(granted)
        self.revoke_all_button.setEnabled(granted)

    # -- allowed roots -------------------------------------------------------------------------------------

    def refresh_workspaces(self) -> None:
        """Offer the current workspace folders (and any that already have extra folders)."""
        current = self.workspace_combo.currentData()
        folders = dict.fromkeys([os.path.realpath(folder) for folder in self._workspaces()] + sorted(self._roots))
        self.workspace_combo.blockSignals(True)
        self.workspace_combo.clear()
        for folder in folders:
            self.workspace_combo.addItem(folder, folder)
        index = self.workspace_combo.findData(current)
        self.workspace_combo.setCurrentIndex(max(index, 0))
        self.workspace_combo.blockSignals(False)
        self._show_roots()

    def roots(self, workspace: str) -> list[str]:
        """The staged extra folders of a workspace (real path)."""
        return list(self._roots.get(os.path.realpath(workspace), []))

    def add_root(self) -> None:
        """Ask for a folder and add it to the selected workspace's extra folders (on save)."""
        workspace = self.workspace_combo.currentData()
        if not workspace:
            return
        folder = self._chooser(self, "Folder the file tools may reach")
        if folder:
            roots = self._roots.setdefault(workspace, [])
            real = os.path.realpath(folder)
            if real not in roots:
                roots.append(real)
            self._changed_roots.add(workspace)
            self._show_roots()

    def remove_root(self) -> None:
        """Remove the selected extra folder (on save)."""
        workspace = self.workspace_combo.currentData()
        item = self.roots_list.currentItem()
        if workspace and item is not None:
            self._roots[workspace] = [root for root in self._roots.get(workspace, []) if root != item.text()]
            self._changed_roots.add(workspace)
            self._show_roots()

    def _show_roots(self) -> None:
        workspace = self.workspace_combo.currentData()
        self.roots_list.clear()
        self.roots_list.addItems(self._roots.get(workspace, []) if workspace else [])
        if self.roots_list.count():
            self.roots_list.setCurrentRow(0)
        self.add_root_button.setEnabled(bool(workspace))
        self.remove_root_button.setEnabled(self.roots_list.count() > 0)
        self.network_check.blockSignals(True)
        self.network_check.setChecked(not workspace or workspace not in self._offline)
        self.network_check.blockSignals(False)
        self.network_check.setEnabled(bool(workspace) and self._sandbox.available)

    # -- commands ------------------------------------------------------------------------------------------

    def offline_workspaces(self) -> list[str]:
        """The staged workspaces whose commands run without network."""
        return sorted(self._offline)

    def max_steps(self) -> int | None:
        """The staged step limit (``None`` when it is the agent's default)."""
        value = self.steps_spin.value()
        return None if value == DEFAULT_MAX_STEPS else value

    def auto_compact(self) -> int | None:
        """The staged automatic compaction threshold in percent (``None``: off)."""
        return self.compact_spin.value() if self.compact_check.isChecked() else None

    def _network_toggled(self, allowed: bool) -> None:
        workspace = self.workspace_combo.currentData()
        if workspace:
            self._offline.discard(workspace)
            if not allowed:
                self._offline.add(workspace)

    def _sandbox_text(self) -> str:
        if self._sandbox.available:
            return (
                "bash and bg run in a bubblewrap sandbox: only the workspace (and its extra folders) is writable, the "
                "rest of the system is read-only, and API keys are not in their environment."
            )
        return (
            f"bash and bg are NOT sandboxed: {self._sandbox.reason}. API keys are still kept out of their "
            "environment and masked in their output, but a command can write anywhere you can."
        )

    # -- save ----------------------------------------------------------------------------------------------

    def apply(self) -> None:
        """Write the staged changes to the tool settings file."""
        for tool in sorted(self._tool_settings.always_allowed() - set(self._always)):
            self._tool_settings.revoke(tool)
        for rule in self._tool_settings.allow_rules():
            if rule not in self._rules:
                self._tool_settings.revoke_rule(rule)
        for workspace in sorted(self._changed_roots):
            self._tool_settings.set_allowed_roots(workspace, self._roots.get(workspace, []))
        self._changed_roots.clear()
