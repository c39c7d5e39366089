#!/usr/bin/env python3
"""Checks the MPIJob of a manifest against mpi-operator's CRD, offline.

    python3 deploy/kubernetes/validate.py deploy/kubernetes/mpijob.yaml \
        kubeflow.org_mpijobs.yaml [more CRD files...]

The CRD file is mpi-operator's manifests/base/kubeflow.org_mpijobs.yaml (of
the release the cluster runs). Every MPIJob document of the manifest is
checked against the CRD's v2beta1 openAPIV3Schema (types, required fields,
enums: what the API server rejects), and fields the schema does not know
are listed too (the API server would silently drop them: a typo such as
`tcpSockets` in a probe). The schema spells out the pod templates, so the
launcher's and workers' pod specs are checked as well. Other documents
(ConfigMap, PVC) are only parsed. Needs PyYAML and jsonschema; exits 1 on
any finding.
"""
import sys

import jsonschema
import yaml


def unknown_fields(obj, schema, path=""):
    """Yields the paths of obj's fields that schema does not declare."""
    if isinstance(obj, list):
        for i, item in enumerate(obj):
            yield from unknown_fields(item, schema.get("items", {}), f"{path}[{i}]")
        return
    if not isinstance(obj, dict) or schema.get("x-kubernetes-preserve-unknown-fields"):
        return
    props = schema.get("properties")
    extra = schema.get("additionalProperties")
    for key, value in obj.items():
        if path == "" and key in ("apiVersion", "kind", "metadata"):
            continue
        if props is not None and key in props:
            yield from unknown_fields(value, props[key], f"{path}/{key}")
        elif isinstance(extra, dict):
            yield from unknown_fields(value, extra, f"{path}/{key}")
        elif props is not None:
            yield f"{path}/{key}"


def main(manifest, crd_files):
    docs = [d for d in yaml.safe_load_all(open(manifest)) if d]
    for d in docs:
        print(f"{manifest}: {d['apiVersion']} {d['kind']} {d['metadata']['name']}")
    jobs = [d for d in docs if d["kind"] == "MPIJob"]
    if not jobs:
        print("no MPIJob in", manifest)
        return 1
    bad = 0
    for crd_file in crd_files:
        crd = yaml.safe_load(open(crd_file))
        version = next(v for v in crd["spec"]["versions"] if v["name"] == "v2beta1")
        schema = version["schema"]["openAPIV3Schema"]
        for job in jobs:
            name = job["metadata"]["name"]
            errors = sorted(jsonschema.Draft4Validator(schema).iter_errors(job), key=lambda e: list(e.path))
            for e in errors:
                print(f"  {name}: /{'/'.join(map(str, e.path))}: {e.message}")
            unknown = list(unknown_fields(job, schema))
            for p in unknown:
                print(f"  {name}: {p}: not in the schema (the API server would drop it)")
            bad += len(errors) + len(unknown)
            print(f"{crd_file}: MPIJob {name}: {len(errors)} schema errors, {len(unknown)} unknown fields")
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2:]))
