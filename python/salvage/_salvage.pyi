"""The native half of ``salvage`` (Rust, in-process): JSON text in and out; the typed API
people use is ``salvage/__init__.py``."""

from typing import Any, Callable, Iterator, Optional

__version__: str

class SalvageError(Exception):
    hint: Optional[str]
    path: Optional[str]

class Refused(SalvageError): ...

def inspect(path: str, sha256: bool = ...) -> str: ...
def recover(
    src: str,
    dest: str,
    report: Optional[str] = ...,
    allow_partial: bool = ...,
    profile: str = ...,
    carve: bool = ...,
    history: bool = ...,
    as_of: Optional[int] = ...,
    case: Optional[str] = ...,
    examiner: Optional[str] = ...,
    progress: Optional[Callable[[dict[str, Any]], Any]] = ...,
    provenance: bool = ...,
) -> tuple[str, str, str, str]: ...
def commit(
    incomplete: str, report: Optional[str] = ..., examiner: Optional[str] = ...
) -> tuple[str, str, str, str]: ...
def export_chroma(path: str, collection: Optional[str] = ...) -> Iterator[str]: ...
def timeline(path: str) -> Iterator[str]: ...
def export_xlsx(
    db: str, to: str, table: Optional[str] = ...
) -> tuple[list[tuple[str, int]], int, int]: ...
def scan(
    sources: list[str],
    out: str,
    jobs: int = ...,
    allow_partial: bool = ...,
    carve: bool = ...,
    history: bool = ...,
    triage_only: bool = ...,
) -> Iterator[str]: ...
def scan_plan(
    sources: list[str],
    out: str,
    allow_partial: bool = ...,
    carve: bool = ...,
    history: bool = ...,
    triage_only: bool = ...,
) -> str: ...
def scan_task(options: str, task: str) -> str: ...
def scan_finish(plan: str, done: list[str]) -> str: ...
