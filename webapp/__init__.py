"""The Django project: settings, urls, the Celery app, roles, jobs and storage.

Nothing is imported here, so the Django-free library under `webapp.lib` can be used on a GPU box
without settings; the Celery app is loaded by `WebappConfig.ready` and by `celery -A webapp`.
"""
