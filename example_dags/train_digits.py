"""Distributed training of a small classifier on scikit-learn's bundled digits (8x8 images, 10 classes).

Run by every replica of the example PyTorchJob. The training operator (or the local cluster's
controller) gives each replica MASTER_ADDR, MASTER_PORT, RANK and WORLD_SIZE; torch.distributed
joins them with the gloo backend, and DistributedDataParallel averages gradients across replicas,
each of which trains on its own shard of the data. Rank 0 evaluates and writes the metrics (JSON) to
the metrics file, creating its directory; the example DAG names it after the job.

Run as a Kubeflow Trainer v2 TrainJob with the TrainJobStatus feature on, each node finds the status server's
URL, CA certificate and token in KUBEFLOW_TRAINER_SERVER_URL / _CA_CERT / _TOKEN; rank 0 then reports its
progress after every epoch into the TrainJob's status.trainerStatus (percentage, estimated seconds left, the
epoch's training loss over every node's images, and test accuracy). Without those variables (a PyTorchJob)
nothing is reported. A report that fails costs at most a few seconds once: it prints one warning and reporting
stops; training never fails because of it.

Usage: python train_digits.py <dataset date> <metrics file> [epochs]
"""

import datetime
import json
import os
import ssl
import sys
import time
import urllib.request
from pathlib import Path

import torch
import torch.distributed as dist
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

#: Seconds a progress report may take before it is given up.
REPORT_TIMEOUT_SECONDS = 3.0
#: Images per optimizer step.
BATCH_SIZE = 32


class ProgressReporter:
    """Posts progress to the TrainJob status server (Kubeflow Trainer's TrainJobStatus feature), stdlib only.

    :param environ: where the three KUBEFLOW_TRAINER_SERVER_* variables are read from.
    """

    def __init__(self, environ=os.environ) -> None:
        self.url = environ.get("KUBEFLOW_TRAINER_SERVER_URL")
        self.ca_cert = environ.get("KUBEFLOW_TRAINER_SERVER_CA_CERT")
        self.token_file = environ.get("KUBEFLOW_TRAINER_SERVER_TOKEN")
        self.enabled = bool(self.url and self.ca_cert and self.token_file)

    def report(self, progress: int, remaining_seconds: int, metrics: dict) -> None:
        """Report once; on any failure print one warning and stop reporting (training goes on).

        :param progress: percent done, 0..100 (trainerStatus.progressPercentage).
        :param remaining_seconds: estimated seconds left (trainerStatus.estimatedRemainingSeconds).
        :param metrics: metric name -> number (trainerStatus.metrics, values sent as strings).
        """
        if not self.enabled:
            return
        status = {
            "progressPercentage": max(0, min(100, int(progress))),
            "estimatedRemainingSeconds": max(0, int(remaining_seconds)),
            "metrics": [{"name": name, "value": f"{value:.4f}"} for name, value in metrics.items()],
            "lastUpdatedTime": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        }
        try:
            # Read the token each time: the kubelet may rotate it.
            token = Path(self.token_file).read_text().strip()
            request = urllib.request.Request(
                self.url,
                data=json.dumps({"trainerStatus": status}).encode(),
                headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
                method="POST",
            )
            context = ssl.create_default_context(cafile=self.ca_cert)
            with urllib.request.urlopen(request, context=context, timeout=REPORT_TIMEOUT_SECONDS) as response:
                response.read()
        except Exception as exc:  # reporting must never stop training
            self.enabled = False
            print(f"warning: progress not reported to the TrainJob status, reporting stops: {exc}", flush=True)


def main(dataset_date: str, metrics_file: str, epochs: int) -> None:
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)

    features, labels = load_digits(return_X_y=True)
    x_train, x_test, y_train, y_test = train_test_split(features / 16.0, labels, test_size=0.25, random_state=0)
    shard = len(x_train) // world  # equal shards: every replica takes the same number of steps
    x = torch.tensor(x_train[rank * shard : (rank + 1) * shard], dtype=torch.float32)
    y = torch.tensor(y_train[rank * shard : (rank + 1) * shard])
    print(f"rank {rank}/{world}: {len(x)} training images (dataset date {dataset_date})", flush=True)

    model = torch.nn.parallel.DistributedDataParallel(
        torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))
    )
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    reporter = ProgressReporter() if rank == 0 else None
    started = time.monotonic()
    for epoch in range(1, epochs + 1):
        loss = _mean_over_nodes(_train_epoch(model, optimizer, loss_fn, x, y))
        if rank == 0:
            print(f"epoch {epoch}/{epochs}: loss {loss:.4f}", flush=True)
        if reporter is not None and reporter.enabled:
            per_epoch = (time.monotonic() - started) / epoch
            reported = {"loss": loss, "accuracy": _accuracy(model.module, x_test, y_test)}
            reporter.report(epoch * 100 // epochs, round(per_epoch * (epochs - epoch)), reported)

    if rank == 0:
        accuracy = _accuracy(model, x_test, y_test)
        metrics = {
            "dataset_date": dataset_date,
            "accuracy": round(accuracy, 4),
            "final_loss": round(loss, 4),
            "epochs": epochs,
            "world_size": world,
            "train_images": shard * world,
            "test_images": len(x_test),
            "train_seconds": round(time.monotonic() - started, 2),
        }
        out = Path(metrics_file)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(metrics, indent=2))
        print(f"test accuracy {accuracy:.4f}; metrics written to {out}", flush=True)
    dist.destroy_process_group()


def _train_epoch(model, optimizer, loss_fn, x, y) -> float:
    """One pass over this node's shard in shuffled batches of BATCH_SIZE. Its training loss: the mean over the
    shard's images of their batch's loss (the last batch may hold one image: its loss alone says little)."""
    permutation = torch.randperm(len(x))
    total = 0.0
    for start in range(0, len(x), BATCH_SIZE):
        batch = permutation[start : start + BATCH_SIZE]
        optimizer.zero_grad()
        loss = loss_fn(model(x[batch]), y[batch])
        loss.backward()
        optimizer.step()
        total += loss.item() * len(batch)
    return total / len(x)


def _mean_over_nodes(value: float) -> float:
    """The mean of ``value`` over every node (their shards are the same size); every node must call it."""
    tensor = torch.tensor([value], dtype=torch.float64)
    dist.all_reduce(tensor)
    return tensor.item() / dist.get_world_size()


def _accuracy(model, x_test, y_test) -> float:
    with torch.no_grad():
        predicted = model(torch.tensor(x_test, dtype=torch.float32)).argmax(dim=1)
    return (predicted == torch.tensor(y_test)).float().mean().item()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 10)
