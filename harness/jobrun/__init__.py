"""The cluster specs as shards of an Indexed Job, run on the cluster and collected here.

``python -m harness.jobrun --shards N --context C -- PYTEST_ARGS`` (:mod:`harness.jobrun.__main__`): the plan's
objects (:mod:`~harness.jobrun.plan`), each pod running one shard (:mod:`~harness.jobrun.shard`, ``--job-shard I/N``:
:mod:`~harness.jobrun.select`), its results and files sent through its log (:mod:`~harness.jobrun.wire`), followed
and judged here (:mod:`~harness.jobrun.shards`, :mod:`~harness.jobrun.run`).
"""
