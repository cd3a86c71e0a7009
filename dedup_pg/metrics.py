"""Numbers for operators, in the Prometheus text format.

A sudden change in these (one source's duplicates jumping, errors appearing) is
how operators learn that a site changed its template or a crawler broke. The
values are read from the database at scrape time, so every process that
scrapes reports the same totals.
"""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from .sqlfiles import queries


class _DatabaseCollector:
    def __init__(self, conn: psycopg.Connection) -> None:
        self.conn = conn

    def collect(self) -> Iterator[Metric]:
        verdicts = CounterMetricFamily(
            "dedup_pg_verdicts",
            "Documents received, by source, verdict and layer (rows of document_sightings)",
            labels=["source", "verdict", "layer"],
        )
        for source, verdict, layer, count in self.conn.execute(queries()["metric_verdicts"]):
            verdicts.add_metric([source, verdict, layer], count)
        yield verdicts
        pending = GaugeMetricFamily(
            "dedup_pg_review_pending", "Candidates waiting for a reviewer", labels=["source"]
        )
        for source, count in self.conn.execute(queries()["metric_pending"]):
            pending.add_metric([source], count)
        yield pending
        errors = CounterMetricFamily(
            "dedup_pg_ingest_errors", "Items rejected as bad input", labels=["source"]
        )
        for source, count in self.conn.execute(queries()["metric_errors"]):
            errors.add_metric([source], count)
        yield errors
        row = self.conn.execute(queries()["metric_documents"]).fetchone()
        yield GaugeMetricFamily("dedup_pg_documents", "Kept documents", value=row[0] if row else 0)


def prometheus_text(conn: psycopg.Connection) -> str:
    """The current numbers in the Prometheus text exposition format."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_DatabaseCollector(conn))  # type: ignore[arg-type]
    return generate_latest(registry).decode("utf-8")
