"""The workspace diff (§3), run by ``rubric snapshot`` and ``rubric capture``: the ignored-file snapshot
before a run and the capture after it (diff), on git hardened against the workspace's config (git), with
the byte-exact diff (bytes), the ignore rules (ignores), the private record of a v4 snapshot (record),
special files (special) and the test listing run in the workspace (testlist)."""

from __future__ import annotations

from grading.lazy import lazy_interface

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (`rubric capture` loads this package)

# module -> the public names it defines
_PUBLIC: dict[str, tuple[str, ...]] = {
    "grading.workspace.diff": (
        "CaptureResult",
        "capture",
        "snapshot_ignored",
        "take_snapshot",
        "write_snapshot",
    ),
    "grading.workspace.record": ("record_path",),
    "grading.workspace.testlist": (
        "DEFAULT_MAX_BYTES",
        "DEFAULT_TIMEOUT",
        "ListingFailed",
        "TestListing",
        "list_command",
        "run_test_list",
        "write_listing_error",
    ),
}
__all__, _MODULE_OF, __getattr__, __dir__ = lazy_interface(__name__, _PUBLIC, globals())

if TYPE_CHECKING:
    from grading.workspace.diff import CaptureResult as CaptureResult
    from grading.workspace.diff import capture as capture
    from grading.workspace.diff import snapshot_ignored as snapshot_ignored
    from grading.workspace.diff import take_snapshot as take_snapshot
    from grading.workspace.diff import write_snapshot as write_snapshot
    from grading.workspace.record import record_path as record_path
    from grading.workspace.testlist import DEFAULT_MAX_BYTES as DEFAULT_MAX_BYTES
    from grading.workspace.testlist import DEFAULT_TIMEOUT as DEFAULT_TIMEOUT
    from grading.workspace.testlist import ListingFailed as ListingFailed
    from grading.workspace.testlist import TestListing as TestListing
    from grading.workspace.testlist import list_command as list_command
    from grading.workspace.testlist import run_test_list as run_test_list
    from grading.workspace.testlist import write_listing_error as write_listing_error
