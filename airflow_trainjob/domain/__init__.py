"""The pure domain: what a job's state means, deadlines, failures, pods, ownership, names, what to stop. No I/O,
no Kubernetes client, no Airflow."""
