"""An audit trail for thresholds: dedup_settings_history, filled by triggers on
dedup_settings, dedup_sources and embedding_models; dedup_revert_changes.

Revision ID: 0006
Revises: 0005
"""

from alembic import op

from dedup_pg.sqlfiles import read_sql

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(read_sql("0006_calibration.sql"))


def downgrade() -> None:
    op.execute(
        """
        DROP TRIGGER embedding_models_audit ON embedding_models;
        DROP TRIGGER dedup_sources_audit ON dedup_sources;
        DROP TRIGGER dedup_settings_audit ON dedup_settings;
        DROP FUNCTION dedup_revert_changes(bigint, boolean);
        DROP FUNCTION embedding_models_audit();
        DROP FUNCTION dedup_sources_audit();
        DROP FUNCTION dedup_settings_audit();
        DROP FUNCTION dedup_record_object_changes(text, text, jsonb, jsonb);
        DROP FUNCTION dedup_record_change(text, text, text, jsonb, jsonb);
        DROP TABLE dedup_settings_history;
        """
    )
