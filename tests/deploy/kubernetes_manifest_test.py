#!/usr/bin/env python3
"""Checks deploy/kubernetes/irontuned.yaml: it parses; irontuned serves TLS
and tokens from mounted secrets; its probes ask gRPC health over TLS.

Usage: kubernetes_manifest_test.py MANIFEST. Exit 0 passes, 1 fails, 77
skips (python3-yaml missing).
"""
import sys

try:
    import yaml
except ImportError:
    print("skipped: python3-yaml is not installed (scripts/install-deps)")
    sys.exit(77)


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def flag(args, name):
    """The value of --name=VALUE in args, or None."""
    for arg in args:
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return None


def mounted_secret(spec, container, path):
    """The secret mounted at the directory holding `path`, or None."""
    secrets = {v["name"]: v["secret"]["secretName"]
               for v in spec.get("volumes", []) if "secret" in v}
    for mount in container.get("volumeMounts", []):
        if path.startswith(mount["mountPath"].rstrip("/") + "/"):
            return secrets.get(mount["name"])
    return None


def check_probe(probe, name, spec, container):
    if probe is None:
        fail(name + ": missing")
    if "grpc" in probe:
        fail(name + ": the kubelet's grpc probe is plaintext, which irontuned "
             "refuses off loopback; use `irontune-client health` over TLS")
    command = probe.get("exec", {}).get("command", [])
    if not command or command[0] != "irontune-client" or "health" not in command:
        fail(name + ": not a gRPC health check (irontune-client ... health): "
             + repr(command))
    ca = flag(command, "--tls-ca")
    if ca is None:
        fail(name + ": health check without --tls-ca")
    if mounted_secret(spec, container, ca) is None:
        fail(name + ": --tls-ca " + ca + " is not in a mounted secret")


def main(path):
    with open(path) as f:
        docs = [d for d in yaml.safe_load_all(f) if d is not None]
    daemonsets = [d for d in docs if d.get("kind") == "DaemonSet"]
    if len(daemonsets) != 1:
        fail("expected one DaemonSet, found %d" % len(daemonsets))
    spec = daemonsets[0]["spec"]["template"]["spec"]
    containers = [c for c in spec["containers"] if c["name"] == "irontuned"]
    if len(containers) != 1:
        fail("no irontuned container")
    container = containers[0]
    args = container.get("args", [])
    if "--insecure" in args:
        fail("the manifest serves plaintext (--insecure)")
    for name in ("--tls-cert", "--tls-key", "--tokens"):
        value = flag(args, name)
        if value is None:
            fail("irontuned has no " + name)
        if mounted_secret(spec, container, value) is None:
            fail(name + " " + value + " is not in a mounted secret")
    check_probe(container.get("readinessProbe"), "readinessProbe", spec,
                container)
    check_probe(container.get("livenessProbe"), "livenessProbe", spec,
                container)
    services = [d for d in docs if d.get("kind") == "Service"]
    if not services:
        fail("no Service")
    print("ok: %s parses; TLS and token secrets are mounted; probes ask "
          "gRPC health over TLS" % path)


if __name__ == "__main__":
    main(sys.argv[1])
