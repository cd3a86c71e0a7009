"""dedup-pg: text de-duplication on PostgreSQL.

>>> from dedup_pg import Deduper
>>> with Deduper() as dd:                      # doctest: +SKIP
...     verdict = dd.ingest({"id": "n1", "title": "标题", "body": "正文……"})
"""

from .database import DatabaseError
from .deduper import Deduper
from .documents import Document, InputError
from .normalize import NORMALIZATION_VERSION
from .verdicts import Verdict

__all__ = ["DatabaseError", "Deduper", "Document", "InputError", "NORMALIZATION_VERSION", "Verdict"]
__version__ = "0.1.0"
