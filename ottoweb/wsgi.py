from __future__ import annotations

import os

from django.core.wsgi import get_wsgi_application

from ottoweb.cores import one_core_per_request

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ottoweb.settings")
# The web process serves many requests at once: one core for each one's embedding and vector math
# (a query embedding that takes every core slows recall's keyword searches more than it gains).
one_core_per_request()
application = get_wsgi_application()
