"""Faithful fakes of the services the stack talks to (Qdrant REST, GitHub REST + webhooks), with fault injection.

Each fake runs in-process (an httpx transport, no socket), on a real socket (``serve()``), standalone
(``python -m fakes.<name>``) and in a cluster (its Dockerfile and manifests).
"""
