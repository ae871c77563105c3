"""What a topic run writes: ``topics.json`` / ``topics.md`` (``output``), the self-contained
``report.html`` (``report``) and its views (``report_views``), and the automatic metrics
(``metrics``)."""
