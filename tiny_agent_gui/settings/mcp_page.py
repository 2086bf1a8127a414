"""The MCP tab: the app's MCP servers (the app catalog, :mod:`tiny_agent_core.mcp.app_catalog`), which of them the
window connects, their tokens, a Test that lists a server's tools, and "always allow" per server and per tool.

Everything is staged and applied by the dialog's Save (:meth:`McpPage.apply`): the catalog file is written
atomically, a remote server's token goes to the keyring (entry ``mcp:<alias>``), never into the file, and the
permissions go to :class:`~tiny_agent_core.tools.approval.ToolSettings` as ``mcp:<alias>`` (every tool of the
server) or the tool's function name (one tool), which is what the approval policy reads. A Claude Desktop file
is imported only when the user picks it. **Test** connects the selected server as it is staged, in a worker thread
with its own event loop (bounded by the connect timeout), and shows the tools it lists or the typed error with
what to do next.
"""

from __future__ import annotations

import asyncio
import shlex
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from tiny_agent_core.mcp.app_catalog import (
    AppCatalog,
    import_servers,
    load_app_catalog,
    save_app_catalog,
    spec_of,
    token_entry,
)
from tiny_agent_core.mcp.app_servers import ProbedTool, TokenReader, probe_server_in_thread
from tiny_agent_core.mcp.catalog import DEFAULT_CALL_TIMEOUT_MS, HttpServer, ServerSpec, StdioServer
from tiny_agent_core.mcp.errors import McpCatalogError, McpConnectError, connect_advice
from tiny_agent_core.mcp.names import function_name, parse_function_name
from tiny_agent_core.secrets import KeyStore
from tiny_agent_core.tools.approval import ToolSettings

__all__ = ["FileChooser", "McpPage", "Probe", "ServerDialog", "choose_file"]

FileChooser = Callable[[QWidget, str], str | None]
"""``chooser(parent, title)`` → the chosen file, or ``None`` when the user cancelled."""

Probe = Callable[[ServerSpec, TokenReader], Awaitable[list[ProbedTool]]]
"""``await probe(spec, tokens)`` → the server's tools; raises :class:`McpConnectError`."""


def choose_file(parent: QWidget, title: str) -> str | None:
    """The platform's file picker for a JSON file; ``None`` when cancelled."""
    path, _ = QFileDialog.getOpenFileName(parent, title, str(Path.home()), "JSON files (*.json);;All files (*)")
    return path or None


async def probe_in_thread(spec: ServerSpec, tokens: TokenReader) -> list[ProbedTool]:
    """The real Test: :func:`~tiny_agent_core.mcp.app_servers.probe_server` in a worker thread."""
    return await asyncio.to_thread(probe_server_in_thread, spec, keys=tokens)


class _StagedTokens:
    """A typed (not yet saved) token first, else the keyring's."""

    def __init__(self, typed: dict[str, str], keys: KeyStore) -> None:
        self._typed = dict(typed)
        self._keys = keys

    def get(self, key: str, /) -> str | None:
        return self._typed.get(key) or (self._keys.get(key) if self._keys.available else None)


def _where(spec: ServerSpec) -> str:
    if isinstance(spec, HttpServer):
        return spec.url
    return shlex.join([spec.command, *spec.args])


class ServerDialog(QDialog):
    """Add or edit one server: local program (command, arguments, environment, folder) or remote (URL, token)."""

    def __init__(self, parent: QWidget | None, spec: ServerSpec | None, taken: set[str]) -> None:
        super().__init__(parent)
        self.setWindowTitle("MCP server" if spec is None else f"MCP server {spec.alias}")
        self.setAccessibleName("MCP server")
        self._taken = taken
        self.spec: ServerSpec | None = None
        """The checked entry, once accepted."""
        self.token: str | None = None
        """A token typed for a remote server (to be saved in the keyring), once accepted."""
        self.alias_edit = QLineEdit(spec.alias if spec is not None else "")
        self.alias_edit.setAccessibleName("Alias")
        self.alias_edit.setReadOnly(spec is not None)  # renaming would orphan its token and permissions
        self.kind_combo = QComboBox()
        self.kind_combo.setAccessibleName("Kind")
        self.kind_combo.addItem("Local program (stdio)", "stdio")
        self.kind_combo.addItem("Remote server (Streamable HTTP)", "http")
        self.command_edit = QLineEdit()
        self.command_edit.setAccessibleName("Command")
        self.args_edit = QLineEdit()
        self.args_edit.setAccessibleName("Arguments")
        self.args_edit.setPlaceholderText('as in a shell: -y some-server "/path with spaces"')
        self.env_edit = QPlainTextEdit()
        self.env_edit.setAccessibleName("Environment")
        self.env_edit.setPlaceholderText("NAME=value, one per line (kept in the catalog file, readable by you only)")
        self.env_edit.setFixedHeight(70)
        self.cwd_edit = QLineEdit()
        self.cwd_edit.setAccessibleName("Working folder")
        self.url_edit = QLineEdit()
        self.url_edit.setAccessibleName("URL")
        self.token_env_edit = QLineEdit()
        self.token_env_edit.setAccessibleName("Token environment variable")
        self.token_edit = QLineEdit()
        self.token_edit.setAccessibleName("Token")
        self.token_edit.setEchoMode(QLineEdit.EchoMode.Password)
        self.token_edit.setPlaceholderText("saved in the system keyring; empty keeps the stored one")
        self.allowed_edit = QLineEdit()
        self.allowed_edit.setAccessibleName("Allowed tools")
        self.allowed_edit.setPlaceholderText("empty: every tool; else names separated by commas")
        self.timeout_spin = QSpinBox()
        self.timeout_spin.setAccessibleName("Call timeout in seconds")
        self.timeout_spin.setRange(1, 3600)
        self.timeout_spin.setSuffix(" s")
        self.timeout_spin.setValue(DEFAULT_CALL_TIMEOUT_MS // 1000)
        self.error_label = QLabel()
        self.error_label.setWordWrap(True)
        self.error_label.setAccessibleName("Problem")
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)

        form = QFormLayout()
        form.addRow("&Alias:", self.alias_edit)
        form.addRow("&Kind:", self.kind_combo)
        self._local_rows = [
            ("Co&mmand:", self.command_edit),
            ("A&rguments:", self.args_edit),
            ("&Environment:", self.env_edit),
            ("&Working folder:", self.cwd_edit),
        ]
        self._remote_rows = [
            ("&URL:", self.url_edit),
            ("Token &variable:", self.token_env_edit),
            ("&Token:", self.token_edit),
        ]
        for label, field in (*self._local_rows, *self._remote_rows):
            form.addRow(label, field)
        form.addRow("Allowed t&ools:", self.allowed_edit)
        form.addRow("Call time&out:", self.timeout_spin)
        self._form = form
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.error_label)
        layout.addWidget(self.buttons)
        self.kind_combo.currentIndexChanged.connect(lambda _: self._show_kind())
        if spec is not None:
            self._fill(spec)
        self._show_kind()

    def _fill(self, spec: ServerSpec) -> None:
        if isinstance(spec, StdioServer):
            self.kind_combo.setCurrentIndex(0)
            self.command_edit.setText(spec.command)
            self.args_edit.setText(shlex.join(spec.args))
            self.env_edit.setPlainText("\n".join(f"{name}={value}" for name, value in spec.env.items()))
            self.cwd_edit.setText(spec.cwd or "")
        else:
            self.kind_combo.setCurrentIndex(1)
            self.url_edit.setText(spec.url)
            self.token_env_edit.setText(spec.token_env or "")
        self.allowed_edit.setText(", ".join(spec.allowed_tools or ()))
        self.timeout_spin.setValue(max(1, spec.call_timeout_ms // 1000))

    def _show_kind(self) -> None:
        local = self.kind_combo.currentData() == "stdio"
        for _, field in self._local_rows:
            self._form.setRowVisible(field, local)
        for _, field in self._remote_rows:
            self._form.setRowVisible(field, not local)

    def entry(self) -> dict[str, object]:
        """The form as a catalog entry (reference format); ``ValueError`` for arguments a shell could not split or
        an environment line without ``=``."""
        entry: dict[str, object]
        if self.kind_combo.currentData() == "stdio":
            env: dict[str, str] = {}
            for line in self.env_edit.toPlainText().splitlines():
                if line.strip():
                    name, equals, value = line.partition("=")
                    if not equals:
                        raise ValueError(f"environment: {line.strip()!r} is not NAME=value")
                    env[name.strip()] = value
            entry = {"command": self.command_edit.text().strip(), "args": shlex.split(self.args_edit.text())}
            if env:
                entry["env"] = env
            if self.cwd_edit.text().strip():
                entry["cwd"] = self.cwd_edit.text().strip()
        else:
            entry = {"url": self.url_edit.text().strip()}
            if self.token_env_edit.text().strip():
                entry["tokenEnv"] = self.token_env_edit.text().strip()
        allowed = [name.strip() for name in self.allowed_edit.text().split(",") if name.strip()]
        if allowed:
            entry["allowedTools"] = allowed
        entry["callTimeoutMs"] = self.timeout_spin.value() * 1000
        return entry

    def accept(self) -> None:
        """Keep the entry when it is a valid catalog entry; else say what is wrong and stay open."""
        alias = self.alias_edit.text().strip()
        if not self.alias_edit.isReadOnly() and alias in self._taken:
            self.error_label.setText(f"There is already a server named {alias}; choose another alias.")
            return
        try:
            self.spec = spec_of(alias, self.entry())
        except (McpCatalogError, ValueError) as error:
            self.error_label.setText(str(error))
            return
        token = self.token_edit.text().strip()
        self.token = token if isinstance(self.spec, HttpServer) and token else None
        super().accept()


class McpPage(QWidget):
    """Staged servers, enabled set, tokens and "always allow" permissions (see the module docstring)."""

    COLUMNS = ("Enabled", "Alias", "Kind", "Command or URL", "Always allow")

    def __init__(
        self,
        path: Path,
        key_store: KeyStore,
        tool_settings: ToolSettings,
        *,
        probe: Probe = probe_in_thread,
        chooser: FileChooser = choose_file,
    ) -> None:
        super().__init__()
        self.path = path
        self._keys = key_store
        self._tool_settings = tool_settings
        self._probe = probe
        self._chooser = chooser
        self.load_error: str | None = None
        try:
            catalog = load_app_catalog(path)
        except McpCatalogError as error:
            catalog = AppCatalog()
            self.load_error = str(error)
        self._servers: dict[str, ServerSpec] = dict(catalog.servers)
        self._enabled: set[str] = set(catalog.enabled)
        self._dirty = False
        self._tokens: dict[str, str] = {}
        self._forget: set[str] = set()
        self._granted = {name for name in tool_settings.always_allowed() if name.startswith("mcp")}
        self._always = set(self._granted)
        self._tasks: set[asyncio.Task[None]] = set()
        self.test_task: asyncio.Task[None] | None = None
        """The running (or last) Test, for tests to await."""
        self.editor: ServerDialog | None = None
        """The open add/edit dialog."""

        intro = QLabel(
            "MCP servers give the agent more tools. Enabled servers are started (or reached) when a session first "
            f"runs; each call asks for approval unless always allowed. Catalog file: {path}"
        )
        intro.setWordWrap(True)
        intro.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.problem_label = QLabel(
            f"The MCP catalog could not be read ({self.load_error}); it is replaced only when you change something."
            if self.load_error
            else ""
        )
        self.problem_label.setWordWrap(True)
        self.problem_label.setAccessibleName("MCP catalog problem")
        self.table = QTableWidget(0, len(self.COLUMNS))
        self.table.setAccessibleName("MCP servers")
        self.table.setHorizontalHeaderLabels(list(self.COLUMNS))
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().hide()
        self.table.horizontalHeader().setSectionResizeMode(3, QHeaderView.ResizeMode.Stretch)
        self.add_button = QPushButton("&Add…")
        self.add_button.setAccessibleName("Add an MCP server")
        self.edit_button = QPushButton("&Edit…")
        self.edit_button.setAccessibleName("Edit the selected MCP server")
        self.remove_button = QPushButton("&Remove")
        self.remove_button.setAccessibleName("Remove the selected MCP server")
        self.import_button = QPushButton("&Import Claude Desktop config…")
        self.import_button.setAccessibleName("Import servers from a Claude Desktop config file")
        self.test_button = QPushButton("&Test")
        self.test_button.setAccessibleName("Test the selected MCP server")
        self.test_status = QLabel("Select a server and press Test to see the tools it offers.")
        self.test_status.setWordWrap(True)
        self.test_status.setAccessibleName("MCP test result")
        self.test_status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.tools_table = QTableWidget(0, 3)
        self.tools_table.setAccessibleName("Tools of the tested server")
        self.tools_table.setHorizontalHeaderLabels(["Tool", "Description", "Always allow"])
        self.tools_table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.tools_table.verticalHeader().hide()
        self.tools_table.horizontalHeader().setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        self._tested: str | None = None

        layout = QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addWidget(self.problem_label)
        layout.addWidget(self.table, 2)
        row = QHBoxLayout()
        for button in (self.add_button, self.edit_button, self.remove_button, self.import_button, self.test_button):
            row.addWidget(button)
        row.addStretch(1)
        layout.addLayout(row)
        layout.addWidget(self.test_status)
        layout.addWidget(self.tools_table, 2)

        self.add_button.clicked.connect(lambda: self._open_editor(None))
        self.edit_button.clicked.connect(self._edit_selected)
        self.remove_button.clicked.connect(self.remove_selected)
        self.import_button.clicked.connect(self.import_claude_config)
        self.test_button.clicked.connect(self.test_selected)
        self.table.itemChanged.connect(self._check_changed)
        self.table.itemSelectionChanged.connect(self._selection_changed)
        self.tools_table.itemChanged.connect(self._tool_check_changed)
        self._show_servers(None)

    # -- staged state ----------------------------------------------------------------------------------------

    def staged(self) -> AppCatalog:
        """The catalog as it would be saved."""
        return AppCatalog(dict(self._servers), frozenset(self._enabled & set(self._servers)))

    def always_allowed(self) -> set[str]:
        """The staged MCP permissions (``mcp:<alias>`` and tool function names)."""
        return set(self._always)

    def selected_alias(self) -> str | None:
        """The alias of the selected row."""
        row = self.table.currentRow()
        item = self.table.item(row, 1) if row >= 0 else None
        return item.text() if item is not None else None

    def add(self, spec: ServerSpec, token: str | None = None, *, enabled: bool = True) -> None:
        """Stage a new (or changed) server, enabled unless said otherwise, and its token."""
        self._servers[spec.alias] = spec
        if enabled:
            self._enabled.add(spec.alias)
        if token:
            self._tokens[spec.alias] = token
        self._forget.discard(spec.alias)  # a server added back keeps the token stored for it
        self._dirty = True
        self._show_servers(spec.alias)

    def remove_selected(self) -> None:
        """Remove the selected server with its token and permissions (on save)."""
        alias = self.selected_alias()
        if alias is None:
            return
        spec = self._servers.pop(alias)
        self._enabled.discard(alias)
        self._tokens.pop(alias, None)
        if isinstance(spec, HttpServer):
            self._forget.add(alias)
        self._always = {name for name in self._always if not _belongs(name, alias)}
        self._dirty = True
        if self._tested == alias:
            self._show_tools(None, [])
        self._show_servers(None)

    def import_claude_config(self) -> None:
        """Ask for a Claude Desktop (or tiny-agent) catalog file and stage its servers (existing aliases kept)."""
        picked = self._chooser(self, "Import MCP servers from a Claude Desktop config file")
        if not picked:
            return
        task = asyncio.ensure_future(self._import(picked))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _import(self, picked: str) -> None:
        """Read ``picked`` in a worker thread (a slow or stuck file must not freeze the dialog), then stage it."""
        try:
            added, skipped = await asyncio.to_thread(import_servers, picked, list(self._servers))
        except McpCatalogError as error:
            self.test_status.setText(f"Nothing was imported: {error}")
            return
        for alias in [alias for alias in added if alias in self._servers]:  # added meanwhile: kept, as before
            del added[alias]
            skipped.append(alias)
        for spec in added.values():
            self.add(spec, enabled=False)
        words = f"Imported {len(added)} server(s), not enabled yet: tick Enabled for those the window should start."
        if skipped:
            words += f" Skipped (the alias exists): {', '.join(skipped)}."
        self.test_status.setText(words)

    # -- the table -------------------------------------------------------------------------------------------

    def _show_servers(self, select: str | None) -> None:
        self.table.blockSignals(True)
        self.table.setRowCount(0)
        for alias, spec in self._servers.items():
            row = self.table.rowCount()
            self.table.insertRow(row)
            enabled = QTableWidgetItem()
            enabled.setFlags(Qt.ItemFlag.ItemIsUserCheckable | Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable)
            enabled.setCheckState(Qt.CheckState.Checked if alias in self._enabled else Qt.CheckState.Unchecked)
            enabled.setToolTip("Start (or reach) this server when a session runs")
            self.table.setItem(row, 0, enabled)
            self.table.setItem(row, 1, QTableWidgetItem(alias))
            self.table.setItem(row, 2, QTableWidgetItem("http" if isinstance(spec, HttpServer) else "stdio"))
            self.table.setItem(row, 3, QTableWidgetItem(_where(spec)))
            always = QTableWidgetItem()
            always.setFlags(Qt.ItemFlag.ItemIsUserCheckable | Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable)
            granted = f"mcp:{alias}" in self._always
            always.setCheckState(Qt.CheckState.Checked if granted else Qt.CheckState.Unchecked)
            always.setToolTip("Every tool of this server runs without asking (a risky call still asks)")
            self.table.setItem(row, 4, always)
            if alias == select:
                self.table.setCurrentCell(row, 1)
        self.table.blockSignals(False)
        if select is None and self.table.rowCount():
            self.table.setCurrentCell(0, 1)
        self.table.resizeColumnsToContents()
        self._selection_changed()

    def _check_changed(self, item: QTableWidgetItem) -> None:
        alias_item = self.table.item(item.row(), 1)
        if alias_item is None:
            return
        alias, checked = alias_item.text(), item.checkState() == Qt.CheckState.Checked
        if item.column() == 0:
            (self._enabled.add if checked else self._enabled.discard)(alias)
            self._dirty = True
        elif item.column() == 4:
            (self._always.add if checked else self._always.discard)(f"mcp:{alias}")

    def _selection_changed(self) -> None:
        selected = self.selected_alias() is not None
        busy = self.test_task is not None and not self.test_task.done()
        self.edit_button.setEnabled(selected)
        self.remove_button.setEnabled(selected)
        self.test_button.setEnabled(selected and not busy)

    def _edit_selected(self) -> None:
        alias = self.selected_alias()
        if alias is not None:
            self._open_editor(self._servers[alias])

    def _open_editor(self, spec: ServerSpec | None) -> None:
        dialog = ServerDialog(self, spec, set(self._servers))
        self.editor = dialog

        def done(result: int) -> None:
            if result == QDialog.DialogCode.Accepted and dialog.spec is not None:
                self.add(dialog.spec, dialog.token, enabled=spec is None or dialog.spec.alias in self._enabled)
            self.editor = None

        dialog.finished.connect(done)
        dialog.open()

    # -- test ------------------------------------------------------------------------------------------------

    def test_selected(self) -> None:
        """Connect the selected server as staged, off the GUI thread; show its tools or why it failed."""
        alias = self.selected_alias()
        if alias is None:
            return
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # no event loop runs (a synchronous test): nothing can be connected
            self.test_status.setText("Testing needs the application's event loop.")
            return
        self.test_task = asyncio.ensure_future(self._test(self._servers[alias]))
        self._tasks.add(self.test_task)
        self.test_task.add_done_callback(self._tasks.discard)
        self._selection_changed()

    async def _test(self, spec: ServerSpec) -> None:
        self.test_status.setText(f"Connecting to {spec.alias}… (at most 10 s)")
        tokens = {token_entry(alias): token for alias, token in self._tokens.items()}
        try:
            tools = await self._probe(spec, _StagedTokens(tokens, self._keys))
        except McpConnectError as error:
            self.test_status.setText(f"✗ {error}\nWhat to do: {connect_advice(error)}")
            self._show_tools(None, [])
        else:
            offered = sum(tool.offered for tool in tools)
            self.test_status.setText(
                f"✓ {spec.alias} answered: {len(tools)} tool(s), {offered} offered to the agent."
                " Tick Always allow for tools that should run without asking."
            )
            self._show_tools(spec.alias, tools)
        finally:
            self.test_task = None
            self._selection_changed()

    def _show_tools(self, alias: str | None, tools: list[ProbedTool]) -> None:
        self._tested = alias
        self.tools_table.blockSignals(True)
        self.tools_table.setRowCount(0)
        for tool in tools:
            row = self.tools_table.rowCount()
            self.tools_table.insertRow(row)
            name = QTableWidgetItem(tool.name if tool.offered else f"{tool.name} (not offered: allowedTools)")
            name.setData(Qt.ItemDataRole.UserRole, tool.name)
            self.tools_table.setItem(row, 0, name)
            description = QTableWidgetItem(tool.description.strip().splitlines()[0] if tool.description else "")
            description.setToolTip(tool.description)
            self.tools_table.setItem(row, 1, description)
            always = QTableWidgetItem()
            always.setFlags(Qt.ItemFlag.ItemIsUserCheckable | Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable)
            granted = alias is not None and function_name(alias, tool.name) in self._always
            always.setCheckState(Qt.CheckState.Checked if granted else Qt.CheckState.Unchecked)
            self.tools_table.setItem(row, 2, always)
        self.tools_table.blockSignals(False)
        self.tools_table.resizeColumnToContents(0)

    def _tool_check_changed(self, item: QTableWidgetItem) -> None:
        name_item = self.tools_table.item(item.row(), 0)
        if self._tested is None or item.column() != 2 or name_item is None:
            return
        name = function_name(self._tested, str(name_item.data(Qt.ItemDataRole.UserRole)))
        if name is not None:
            checked = item.checkState() == Qt.CheckState.Checked
            (self._always.add if checked else self._always.discard)(name)

    async def wait_idle(self) -> None:
        """Wait until the running Test and import have finished (tests)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    def cancel_tasks(self) -> None:
        """Stop waiting for a running Test (the dialog is closing; the worker ends within the connect timeout)."""
        for task in list(self._tasks):
            task.cancel()
        if self.editor is not None:
            self.editor.reject()

    # -- save ------------------------------------------------------------------------------------------------

    def token_writes(self) -> list[Callable[[], None]]:
        """The typed tokens to store, as keyring calls for a worker thread, before :meth:`apply` (a server must not
        be saved without its token). Each raises :class:`SecretStoreError` subclasses or ``ValueError`` (a token a
        header cannot carry)."""
        return [partial(self._keys.set, token_entry(alias), token) for alias, token in sorted(self._tokens.items())]

    def token_deletes(self) -> list[Callable[[], None]]:
        """The forgotten tokens to delete, as keyring calls for a worker thread, after :meth:`apply` (the catalog
        no longer names their servers). Each raises :class:`SecretStoreError` subclasses."""
        gone = sorted(self._forget - set(self._servers))  # never the token of a server the catalog names
        return [partial(self._keys.discard, token_entry(alias)) for alias in gone]

    def apply(self) -> None:
        """After :meth:`token_writes` succeeded: write the catalog (when changed) and the permissions (then
        :meth:`token_deletes`, and :meth:`tokens_deleted` once they succeeded). Raises :class:`McpCatalogError` or
        ``OSError``."""
        self._tokens.clear()
        if self._dirty:
            save_app_catalog(self.path, self.staged())
            self._dirty = False
            self.load_error = None
            self.problem_label.clear()
        for name in sorted(self._always - self._granted):
            self._tool_settings.allow_always(name)
        for name in sorted(self._granted - self._always):
            if name in self._tool_settings.always_allowed():
                self._tool_settings.revoke(name)
        self._granted = set(self._always)

    def tokens_deleted(self) -> None:
        """Every call of :meth:`token_deletes` succeeded: no token is left to forget (a failed one is tried again at
        the next save)."""
        self._forget.clear()


def _belongs(permission: str, alias: str) -> bool:
    """Whether a stored permission (``mcp:<alias>`` or a tool's function name) is one of server ``alias``."""
    if permission == f"mcp:{alias}":
        return True
    parsed = parse_function_name(permission)
    return parsed is not None and parsed[0] == alias
