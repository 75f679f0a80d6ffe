#!/usr/bin/env python3
"""docs/api/openapi.yaml describes exactly the node API lib/fabric/node_api.cc serves: the
document parses as OpenAPI 3, and its paths are the routes the code compares request paths
with (`r.path == "..."`), no more and no fewer; every write method has the bearer security and
a 400 answer. Usage: check_openapi.py <source dir>."""
import os
import re
import sys

import yaml


def main():
    root = sys.argv[1]
    with open(os.path.join(root, "docs", "api", "openapi.yaml")) as f:
        doc = yaml.safe_load(f)
    failures = []
    if not str(doc.get("openapi", "")).startswith("3."):
        failures.append("not an OpenAPI 3 document")
    with open(os.path.join(root, "lib", "fabric", "node_api.cc")) as f:
        code = f.read()
    routes = set(re.findall(r'r\.path == "([^"]+)"', code)) - {"/v1/"}
    paths = set(doc.get("paths", {}))
    if routes != paths:
        failures.append(f"served but not documented: {sorted(routes - paths)}; documented but not "
                        f"served: {sorted(paths - routes)}")
    for path, ops in doc.get("paths", {}).items():
        for method, op in ops.items():
            if method in ("put", "patch", "post", "delete"):
                if op.get("security") != [{"bearer": []}]:
                    failures.append(f"{method.upper()} {path}: no bearer security")
                if "400" not in op.get("responses", {}):
                    failures.append(f"{method.upper()} {path}: no 400 answer")
    for f in failures:
        print("FAIL: " + f)
    print("PASS" if not failures else "")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
