"""Distributed training of a small classifier on scikit-learn's bundled digits (8x8 images, 10 classes).

Run by every replica of the example PyTorchJob. The training operator (or the local cluster's
controller) gives each replica MASTER_ADDR, MASTER_PORT, RANK and WORLD_SIZE; torch.distributed
joins them with the gloo backend, and DistributedDataParallel averages gradients across replicas,
each of which trains on its own shard of the data. Rank 0 evaluates and writes the metrics (JSON) to
the metrics file, creating its directory; the example DAG names it after the job.

Usage: python train_digits.py <dataset date> <metrics file> [epochs]
"""

import json
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split


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
    started = time.monotonic()
    for epoch in range(1, epochs + 1):
        permutation = torch.randperm(len(x))
        for start in range(0, len(x), 32):
            batch = permutation[start : start + 32]
            optimizer.zero_grad()
            loss = loss_fn(model(x[batch]), y[batch])
            loss.backward()
            optimizer.step()
        if rank == 0:
            print(f"epoch {epoch}/{epochs}: loss {loss.item():.4f}", flush=True)

    if rank == 0:
        with torch.no_grad():
            predicted = model(torch.tensor(x_test, dtype=torch.float32)).argmax(dim=1)
        accuracy = (predicted == torch.tensor(y_test)).float().mean().item()
        metrics = {
            "dataset_date": dataset_date,
            "accuracy": round(accuracy, 4),
            "final_loss": round(loss.item(), 4),
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


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 10)
