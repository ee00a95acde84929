"""The provider's pages in the Airflow UI: a "Training job" tab on every task instance and a "Training jobs" page.

An Airflow plugin (:mod:`.plugin`, registered through the provider info) mounts a FastAPI app (:mod:`.app`) in the
api-server under ``/trainjob``: two HTML pages (``static/``), and a JSON API behind Airflow's auth manager
(:mod:`.access`). The API reads the cluster through one shared list-and-watch per (connection, namespace, kind) and
short-lived coalesced reads (:mod:`.cache`), and the task's record of each try (:mod:`.store`); :mod:`.views` turns
what was read into the pages' JSON, :mod:`.settings` holds the options.
"""
