"""
``/metrics``: the Prometheus exposition of batchboard and its database.

Split by mechanism:

- :mod:`.budget`: oxide-batch's cardinality budget (spec B.3): the job
  allowlist, the reserved ``__other__`` value, at most 200 label sets per
  family.
- :mod:`.database`: the gauges read from the metadata schema on a scrape,
  in a constant number of bounded statements, cached for one interval.
- :mod:`.requests`: batchboard's own request count and latency by view
  name and status, shared by a server's worker processes.
- :mod:`.views`: the endpoint, its protection and the exposition.

docs/configuration.md lists every family with its labels.
"""
