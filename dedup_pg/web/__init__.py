"""The review page of ``dedup-pg serve`` (``/review``): server-rendered HTML
(Jinja2, autoescaped), one small JavaScript file for the keyboard and one
stylesheet, both shipped in this package (``static/``): no CDN, no build step.
See :mod:`dedup_pg.web.review`."""
