"""A conversion workspace: its paths, its frozen config and the integrity of its protected files.

Protected: `aether.toml`, everything under `original/` and `.aether/`, and the file names that
could override the test harness (`conftest.py`, pytest config files) anywhere. The hashes of
`aether.toml` and every file under `original/` (a `__pycache__` included: a file nobody recorded
there is tampering) are recorded at creation in a manifest signed with a key kept outside the
workspace, so an edit made behind the server's back is detected, and a copy of each recorded
file is kept under `.aether/protected/` to recover from. The reference is handed to the workers
as the exact bytes whose hash was checked (`verified_original`).

The signature catches edits by confined code and by accident; it cannot stop a shell running as
the same user, who can read the key. A server whose key is not the one a manifest was signed
with (another HOME or state folder) derives the workspace again from the job source and re-signs
it when both agree (aether_mcp.workspace.derivation); `aether-mcp verify` trusts no record at all.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import hashlib
import hmac
import json
import os
import secrets
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from mcp.server.mcpserver.exceptions import ToolError

from aether_mcp.path_guard import SandboxRoot, resolve_inside
from aether_mcp.workspace.config import (
    CANDIDATE_DIR,
    CONFIG_FILE,
    IGNORED_DIR_NAMES,
    MANIFEST,
    ORIGINAL_DIR,
    ORIGINAL_MODULE,
    PLUMBING_NAMES,
    SPARK_MASTER,
    STATE_DIR,
    TESTS_DIR,
    BackendConfig,
    BenchmarkConfig,
    CompareConfig,
    SparkConfig,
    TestsConfig,
    UdfArgConfig,
    UdfConfig,
    WorkspaceConfig,
    check_master,
    load_config,
)

# The package's names: the workspace model here, its layout and config from .config.
__all__ = [
    "BackendConfig",
    "BenchmarkConfig",
    "CANDIDATE_DIR",
    "CONFIG_FILE",
    "CompareConfig",
    "IGNORED_DIR_NAMES",
    "Integrity",
    "MANIFEST",
    "ORIGINAL_DIR",
    "ORIGINAL_MODULE",
    "PLUMBING_NAMES",
    "SPARK_MASTER",
    "STATE_DIR",
    "SparkConfig",
    "TESTS_DIR",
    "TestsConfig",
    "UdfArgConfig",
    "UdfConfig",
    "Workspace",
    "WorkspaceConfig",
    "check_master",
    "key_id",
    "load_config",
    "new_run_id",
    "sign",
    "state_home",
]


@dataclass
class Integrity:
    """Protected files compared with the signed manifest written at creation."""

    intact: bool
    modified: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    manifest_problem: str | None = None
    note: str | None = None  # e.g. re-signed under this server's key after re-deriving from the job source

    def describe(self) -> str:
        if self.manifest_problem:
            return self.manifest_problem
        parts = []
        for label, paths in (("modified", self.modified), ("missing", self.missing), ("added", self.added)):
            if paths:
                parts.append(f"{label}: {', '.join(paths)}")
        return "; ".join(parts) or "intact"


class Workspace:
    """An existing workspace inside the server root."""

    def __init__(self, root: SandboxRoot, path: Path) -> None:
        self.root = root
        self.path = path
        self.config = load_config(path)
        # Set by `from_source`: the reference bytes were derived from the job source, not read from disk on trust.
        self.trusted_original: str | None = None

    @classmethod
    def open(cls, root: SandboxRoot, user_path: str) -> Workspace:
        path = root.resolve(user_path, what="workspace")
        if not (path / CONFIG_FILE).is_file():
            hint = "create one with init_workspace(source, udf)" if not path.exists() else "give the folder init_workspace created (it holds aether.toml)"
            raise ToolError(f"workspace {user_path!r} is not an aether-mcp workspace (no {CONFIG_FILE}); {hint}.")
        return cls(root, path)

    @classmethod
    def open_intact(cls, root: SandboxRoot, user_path: str | Workspace) -> Workspace:
        """Open a workspace for a tool that acts on it: refuses one whose protected files changed.

        A Workspace made by `from_source` is passed through: its reference was derived from the job
        source, which is more than the manifest proves.
        """
        if isinstance(user_path, Workspace):
            if user_path.trusted_original is None:
                user_path.require_intact()
            return user_path
        workspace = cls.open(root, user_path)
        workspace.require_intact()
        return workspace

    @classmethod
    def from_source(cls, root: SandboxRoot, path: Path, module_source: str) -> Workspace:
        """A workspace whose reference is `module_source`, freshly derived from the job source (for verify)."""
        workspace = cls(root, path)
        workspace.trusted_original = module_source
        return workspace

    @property
    def from_scratch(self) -> bool:
        """Judged from first principles (verify): records under .aether/, the freeze included, are not consulted."""
        return self.trusted_original is not None

    # --- paths -------------------------------------------------------------------------------

    @property
    def state_dir(self) -> Path:
        return self.path / STATE_DIR

    @property
    def original_module(self) -> Path:
        return self.path / ORIGINAL_MODULE

    def resolve(self, user_path: str, *, what: str = "path") -> Path:
        """A path inside this workspace (relative to it, or absolute); refuses anything outside."""
        return resolve_inside(user_path, base=self.path, boundary=self.path, what=what, boundary_name="the workspace")

    def relative(self, path: Path) -> PurePosixPath:
        return PurePosixPath(path.relative_to(self.path).as_posix())

    def protection_reason(self, relative: PurePosixPath) -> str | None:
        """Why a workspace-relative path may not be written by the agent, or None when it may."""
        parts = relative.parts
        if not parts:
            return "it is the workspace folder itself"
        if relative.as_posix() == CONFIG_FILE:
            return f"{CONFIG_FILE} is the workspace's frozen config"
        if parts[0] == ORIGINAL_DIR:
            return "original/ holds the reference UDF every conversion is compared against"
        if parts[0] == STATE_DIR:
            return ".aether/ holds the server's own state (snapshots, runs, results)"
        if parts[-1] in PLUMBING_NAMES:
            return f"{parts[-1]} would override the test harness's own pytest plumbing"
        return None

    def editable_files(self) -> dict[str, Path]:
        """The agent's files (tests, candidates, notes): every regular file that is not protected."""
        files: dict[str, Path] = {}
        for directory, dirnames, filenames in os.walk(self.path, followlinks=False):
            here = Path(directory)
            rel_dir = self.relative(here)
            dirnames[:] = sorted(
                d for d in dirnames if d not in IGNORED_DIR_NAMES and self.protection_reason(rel_dir / d) is None
            )
            for name in sorted(filenames):
                rel = rel_dir / name
                full = here / name
                if self.protection_reason(rel) is None and full.is_file() and not full.is_symlink():
                    files[rel.as_posix()] = full
        return files

    # --- integrity -------------------------------------------------------------------------

    def protected_files(self) -> dict[str, Path]:
        """`aether.toml` and every file under `original/`, byte-compiled caches and links included."""
        files = {CONFIG_FILE: self.path / CONFIG_FILE}
        original = self.path / ORIGINAL_DIR
        if original.is_dir():
            for path in sorted(original.rglob("*")):
                if path.is_symlink() or path.is_file():
                    files[self.relative(path).as_posix()] = path
        return files

    def verified_original(self) -> str:
        """The text of original/udf.py, read once and checked against the signed manifest (ToolError if it differs)."""
        if self.trusted_original is not None:
            return self.trusted_original
        path = self.path / ORIGINAL_MODULE
        try:
            data = path.read_bytes() if not path.is_symlink() else b""
        except OSError:
            data = b""
        recorded = self._signed_hashes()
        if recorded is None:
            self.require_intact()  # refuses, or (signed under another key) derives trust again and re-signs
            recorded = self._signed_hashes()
        if recorded is None or recorded.get(ORIGINAL_MODULE) != hashlib.sha256(data).hexdigest():
            self.require_intact()  # says what changed and how to recover
            raise ToolError(f"{ORIGINAL_MODULE} changed while it was being read; call the tool again.")
        return data.decode("utf-8")

    def record_protected(self) -> None:
        """Hash and keep a copy of every protected file; called once, at creation."""
        hashes: dict[str, str] = {}
        for rel, path in self.protected_files().items():
            data = path.read_bytes()
            hashes[rel] = hashlib.sha256(data).hexdigest()
            copy = self.state_dir / "protected" / rel
            copy.parent.mkdir(parents=True, exist_ok=True)
            copy.write_bytes(data)
        body = json.dumps({"files": hashes}, sort_keys=True)
        manifest = {"files": hashes, "signature": sign(body), "key_id": key_id()}
        (self.state_dir / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")

    def _manifest(self) -> tuple[dict[str, str], str, str | None] | None:
        try:
            manifest = json.loads((self.state_dir / MANIFEST).read_text())
            return dict(manifest["files"]), str(manifest["signature"]), manifest.get("key_id")
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def _signed_hashes(self) -> dict[str, str] | None:
        """The manifest's hashes if its signature holds under this server's key."""
        manifest = self._manifest()
        if manifest is None:
            return None
        recorded, signature, _ = manifest
        return recorded if hmac.compare_digest(sign(json.dumps({"files": recorded}, sort_keys=True)), signature) else None

    def integrity(self) -> Integrity:
        manifest = self._manifest()
        if manifest is None:
            return Integrity(False, manifest_problem=f"the protected-file manifest {STATE_DIR}/{MANIFEST} is missing or unreadable")
        recorded, signature, signed_with = manifest
        if not hmac.compare_digest(sign(json.dumps({"files": recorded}, sort_keys=True)), signature):
            if signed_with == key_id():
                return Integrity(False, manifest_problem=f"the protected-file manifest {STATE_DIR}/{MANIFEST} was rewritten outside the server")
            return self._rederive_trust()
        current = self.protected_files()
        result = Integrity(True)
        for rel, digest in sorted(recorded.items()):
            path = current.get(rel)
            if path is None:
                result.missing.append(rel)
            elif hashlib.sha256(path.read_bytes()).hexdigest() != digest:
                result.modified.append(rel)
        result.added = sorted(set(current) - set(recorded))
        result.intact = not (result.modified or result.missing or result.added)
        return result

    def _rederive_trust(self) -> Integrity:
        """The manifest was signed under another key (another HOME or state folder): trust what the job source gives."""
        from aether_mcp.workspace.derivation import rederive

        derivation = rederive(self.root, self.path, self.config)
        if not derivation.matches:
            return Integrity(
                False,
                manifest_problem=f"the protected-file manifest was signed under another key, and the workspace does not match its job source: {'; '.join(derivation.problems)}",
            )
        self.record_protected()
        note = (
            f"the manifest was signed under another key (state folder {state_home()}); original/ and {CONFIG_FILE} were derived again "
            f"from {self.config.udf.source}, matched it exactly, and were re-signed under this server's key"
        )
        return Integrity(True, note=note)

    def require_intact(self) -> None:
        """Refuse (ToolError with how to recover) when protected files changed behind the server's back."""
        integrity = self.integrity()
        if integrity.intact:
            return
        backup = f"{STATE_DIR}/protected/"
        raise ToolError(
            f"workspace {self.path} was edited behind the server's back ({integrity.describe()}); its reference "
            "can no longer be trusted, so tools refuse to run on it. To recover, restore the recorded files from "
            f"{backup} (e.g. `cp {backup}{ORIGINAL_MODULE} {ORIGINAL_MODULE}`) and remove added files, or create a "
            "fresh workspace with init_workspace. workspace_status shows what changed."
        )

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """Serialise changes to this workspace across threads and server processes."""
        self.state_dir.mkdir(exist_ok=True)
        with open(self.state_dir / "lock", "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)


def state_home() -> Path:
    """Where the server keeps what must live outside every workspace (the manifest key)."""
    configured = os.environ.get("AETHER_MCP_STATE_DIR")
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "aether-mcp"


def _signing_key() -> bytes:
    path = state_home() / "manifest.key"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:  # another server process created it first
            pass
        else:
            with os.fdopen(fd, "wb") as handle:
                handle.write(secrets.token_bytes(32))
    return path.read_bytes()


def sign(body: str) -> str:
    """HMAC of `body` under the key kept outside every workspace."""
    return hmac.new(_signing_key(), body.encode(), hashlib.sha256).hexdigest()


def key_id() -> str:
    """A name for this server's key that reveals nothing of it: records say which key signed them."""
    return hashlib.sha256(b"aether-mcp key id\0" + _signing_key()).hexdigest()[:16]


def new_run_id(label: str = "") -> str:
    """A sortable, unique name for one run's folder: UTC time, an optional label, random hex."""
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S")
    return f"{stamp}-{label}-{secrets.token_hex(3)}" if label else f"{stamp}-{secrets.token_hex(3)}"
