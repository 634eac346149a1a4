from __future__ import annotations

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ottoweb.settings")
# One onnxruntime thread per query embedding in the web process: it serves many requests at once,
# and recall embeds the query on a second thread while it runs the keyword searches (a query
# embedding that takes every core slows those searches more than it gains). The Celery worker,
# which embeds turns in batches, keeps every core.
os.environ.setdefault("OTTO_EMBED_THREADS", "1")
application = get_wsgi_application()
