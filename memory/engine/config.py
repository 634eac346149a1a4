"""What the process running the engine tells it: where it may gather the packaged model's files, and
how it runs the local embedding model.

The engine reads none of its settings from the environment: a Django process builds one
`EngineConfig` from its settings (`memory.apps.engine_config`) and hands it over with `configure`
when the app is ready; without one (the engine alone, in a script) the defaults below apply.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class EngineConfig:
    # Where the packaged MiniLM files are gathered, each verified, before fastembed loads them.
    model_cache: Path
    # A folder that already holds the MiniLM files (nothing is gathered then); None: gather them.
    minilm_dir: Path | None = None
    # onnxruntime threads per embedding call; None: every core.
    embed_threads: int | None = None
    # A `fastembed:<model>` without a folder is loaded only from fastembed's local cache, never fetched.
    hub_offline: bool = True


_current = EngineConfig(model_cache=Path.home() / ".cache" / "ottoweb")


def configure(config: EngineConfig) -> None:
    """Use `config` from now on; embedders already built keep what they were built with."""
    global _current
    _current = config


def current() -> EngineConfig:
    """The configuration in force."""
    return _current
