"""
Demo history for batchboard: a scenario catalogue, a seeder, a bulk loader
and a live simulator.

The seeder and the simulator record everything through the write-side
repository, so demo data is only ever data a real runtime could have
written. The bulk loader takes a faster path (``COPY`` on PostgreSQL) for
benchmarks, writing only rows of the same shapes.
"""
