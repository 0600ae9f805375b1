"""Import rubric.json files as draft revisions and export admitted revisions: the names of both halves.

The import (all-or-nothing) lives in :mod:`rubrics_app.services.rubrics.imports`, reading zips and checkouts in
:mod:`rubrics_app.services.rubrics.files`, the export (rubric.json, zip, checkout, and its job) in
:mod:`rubrics_app.services.rubrics.exports`; this module keeps every public name importable from here.
"""

from __future__ import annotations

from rubrics_app.services.rubrics.exports import (
    EXPORT_GIT_TIMEOUT as EXPORT_GIT_TIMEOUT,
)
from rubrics_app.services.rubrics.exports import (
    CheckoutExport as CheckoutExport,
)
from rubrics_app.services.rubrics.exports import (
    ExportError as ExportError,
)
from rubrics_app.services.rubrics.exports import (
    export_revision_to_checkout as export_revision_to_checkout,
)
from rubrics_app.services.rubrics.exports import (
    export_rubric_json as export_rubric_json,
)
from rubrics_app.services.rubrics.exports import (
    export_zip as export_zip,
)
from rubrics_app.services.rubrics.exports import (
    rubric_json_bytes as rubric_json_bytes,
)
from rubrics_app.services.rubrics.exports import (
    start_export as start_export,
)
from rubrics_app.services.rubrics.exports import (
    write_many_to_checkout as write_many_to_checkout,
)
from rubrics_app.services.rubrics.exports import (
    write_to_checkout as write_to_checkout,
)
from rubrics_app.services.rubrics.files import (
    ImportFailed as ImportFailed,
)
from rubrics_app.services.rubrics.files import (
    ImportProblem as ImportProblem,
)
from rubrics_app.services.rubrics.files import (
    TaskFiles as TaskFiles,
)
from rubrics_app.services.rubrics.files import (
    checked_zip_members as checked_zip_members,
)
from rubrics_app.services.rubrics.files import (
    read_checkout as read_checkout,
)
from rubrics_app.services.rubrics.files import (
    read_zip as read_zip,
)
from rubrics_app.services.rubrics.files import (
    zip_member_path as zip_member_path,
)
from rubrics_app.services.rubrics.imports import (
    MAX_JSON_DEPTH as MAX_JSON_DEPTH,
)
from rubrics_app.services.rubrics.imports import (
    PreparedTask as PreparedTask,
)
from rubrics_app.services.rubrics.imports import (
    _unstorable_text as _unstorable_text,  # runs.py reads it
)
from rubrics_app.services.rubrics.imports import (
    import_checkout as import_checkout,
)
from rubrics_app.services.rubrics.imports import (
    import_rubric_zip as import_rubric_zip,
)
from rubrics_app.services.rubrics.imports import (
    import_task_files as import_task_files,
)
from rubrics_app.services.rubrics.imports import (
    repository_for_checkout as repository_for_checkout,
)
from rubrics_app.services.rubrics.imports import (
    task_file_problems as task_file_problems,
)
