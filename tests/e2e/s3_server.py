"""moto's S3 server on 127.0.0.1 for the remote-input tests (test_remote.py, test_slurm.py): started and stopped by
process id, every request's SigV4 signature checked against an IAM user's key once the bucket is filled."""

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path


def moto_available():
    try:
        import boto3  # noqa: F401
        import moto.server  # noqa: F401
        return True
    except ImportError:
        return False


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class MotoS3:
    """A bucket holding `objects` ({key: local file}), readable by one IAM user whose keys `env` names."""

    def __init__(self, bucket, objects, extra_env=None):
        port = free_port()
        self.process = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.endpoint = f"http://127.0.0.1:{port}"
        try:
            self.wait_until_up()
            key, secret = self.fill(bucket, objects)
            # From here on moto checks every request's signature against the user's key.
            urllib.request.urlopen(urllib.request.Request(self.endpoint + "/moto-api/reset-auth", data=b"0",
                                                          headers={"Content-Type": "text/plain"}, method="POST"))
        except BaseException:
            self.stop()
            raise
        self.env = {"AWS_ENDPOINT_URL": self.endpoint, "AWS_ACCESS_KEY_ID": key, "AWS_SECRET_ACCESS_KEY": secret,
                    "AWS_REGION": "us-east-1", **(extra_env or {})}

    def wait_until_up(self):
        for _ in range(300):
            try:
                urllib.request.urlopen(self.endpoint + "/moto-api/data.json")
                return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("moto's server did not start")

    def fill(self, bucket, objects):
        import boto3

        client = {"endpoint_url": self.endpoint, "aws_access_key_id": "setup", "aws_secret_access_key": "setup",
                  "region_name": "us-east-1"}
        iam = boto3.client("iam", **client)
        iam.create_user(UserName="scanner")
        iam.put_user_policy(UserName="scanner", PolicyName="read", PolicyDocument=json.dumps(
            {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}))
        access = iam.create_access_key(UserName="scanner")["AccessKey"]
        s3 = boto3.client("s3", **client)
        s3.create_bucket(Bucket=bucket)
        for key, file in objects.items():
            s3.upload_file(str(file), bucket, key)
        return access["AccessKeyId"], access["SecretAccessKey"]

    def stop(self):
        os.kill(self.process.pid, signal.SIGTERM)
        self.process.wait()


def folder_objects(prefix, folder):
    """{prefix/relative path: file} for every file under `folder`."""
    return {f"{prefix}/{p.relative_to(folder).as_posix()}": p for p in sorted(Path(folder).rglob("*")) if p.is_file()}
