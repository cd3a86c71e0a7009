"""Learned template noise: source_templates (analysts read and edit it),
source_template_lines (the learner's counts), source_template_state (per-source
progress and pattern version); settings for learning, script folding and the
HTML extractor.

Revision ID: 0005
Revises: 0004
"""

from alembic import op

from dedup_pg.sqlfiles import read_sql

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(read_sql("0005_templates.sql"))


def downgrade() -> None:
    op.execute(
        "DROP TABLE source_templates, source_template_lines, source_template_state;"
        " DROP FUNCTION dedup_template_bump(), dedup_template_learned_version();"
        " DELETE FROM dedup_settings WHERE name IN"
        " ('template_min_share', 'template_min_docs', 'script_folding', 'html_extractor')"
    )
