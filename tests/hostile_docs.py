"""Hostile service definitions and OpenAPI documents, made to order (tests and bench/hostile_imports.py).

Each maker answers the document's text. Sizes are parameters: the tests use shapes just past a
limit, the bench the figures of issue 14 (40 s of CPU, 476 MB, 408 MB before the limits).
"""
from __future__ import annotations

import json


def openapi(paths: dict, components: dict | None = None, **top) -> dict:
    doc = {"openapi": "3.0.3", "info": {"title": "Hostile", "version": "1"}, "paths": paths}
    if components is not None:
        doc["components"] = components
    doc.update(top)
    return doc


def text(doc) -> str:
    return json.dumps(doc)


def allof_explosion(width: int = 12, depth: int = 8, operations: int = 50) -> str:
    """S0 = allOf [S1] * width, S1 = allOf [S2] * width, ...: width ** depth visits if walked naively."""
    schemas = {}
    for i in range(depth):
        schemas[f"S{i}"] = {"allOf": [{"$ref": f"#/components/schemas/S{i + 1}"}] * width,
                            "properties": {f"p{i}": {"type": "string"}}}
    schemas[f"S{depth}"] = {"type": "object", "properties": {"leaf": {"type": "string"}}}
    body = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/S0"}}}}
    ok = {"200": {"description": "ok", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/S0"}}}}}
    paths = {f"/things{n}": {"post": {"operationId": f"make{n}", "requestBody": body, "responses": ok}}
             for n in range(operations)}
    return text(openapi(paths, {"schemas": schemas}))


def many_parameters(count: int = 300_000) -> str:
    params = [{"name": f"q{i}", "in": "query", "schema": {"type": "string"}} for i in range(count)]
    return text(openapi({"/search": {"get": {"operationId": "search", "parameters": params,
                                             "responses": {"200": {"description": "ok"}}}}}))


def many_operations_openapi(count: int) -> str:
    paths = {f"/r{i}": {"get": {"operationId": f"op{i}", "responses": {"200": {"description": "ok"}}}}
             for i in range(count)}
    return text(openapi(paths))


def many_operations_toml(count: int = 100_000, service: str = "manyops") -> str:
    head = f'service = "{service}"\nname = "Many"\ncredentialType = "noAuth"\n'
    op = '[[operations]]\nname = "op-{i}"\nmethod = "GET"\npath = "/r/{i}"\nsummary = "Operation {i}"\n'
    return head + "".join(op.format(i=i) for i in range(count))


def many_params_toml(count: int, service: str = "manyparams") -> str:
    head = (f'service = "{service}"\nname = "Params"\ncredentialType = "noAuth"\n'
            '[[operations]]\nname = "search"\nmethod = "GET"\npath = "/s"\n')
    return head + "".join(f'[[operations.params]]\nname = "q{i}"\n' for i in range(count))


def yaml_bomb(levels: int = 9, fan: int = 9) -> str:
    """Billion laughs: each anchor a list of `fan` aliases of the one before; used as an enum,
    an example and a description's parent so every walker meets it."""
    lines = ['openapi: "3.0.3"', "info: {title: Bomb, version: '1'}", "x-bomb:", '  l0: &l0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, levels):
        lines.append(f"  l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * fan)}]")
    top = f"*l{levels - 1}"
    lines += ["paths:", "  /boom:", "    get:", "      operationId: boom", "      parameters:",
              "        - name: q", "          in: query", f"          schema: {{type: string, enum: {top}, example: {top}}}",
              "      responses:", "        '200':", "          description: ok", "          content:",
              "            application/json:", f"              schema: {{type: array, items: {{enum: {top}}}, example: {top}}}"]
    return "\n".join(lines) + "\n"


def yaml_paths_bomb(levels: int = 7, fan: int = 10) -> str:
    """Aliases that multiply the operations themselves: paths built of one aliased path item."""
    lines = ['openapi: "3.0.3"', "info: {title: Paths Bomb, version: '1'}", "x-item: &item",
             "  get: {operationId: same, responses: {'200': {description: ok}}}", "paths:"]
    lines += [f"  /p{i}: *item" for i in range(fan ** 2)]
    return "\n".join(lines) + "\n"


def deep_json(depth: int = 100_000) -> str:
    return '{"openapi": "3.0.0", "info": {"title": "Deep"}, "paths": {"/a": {"get": {"x": ' + "[" * depth + "]" * depth + "}}}}"


def deep_yaml(depth: int = 5_000) -> str:
    return 'openapi: "3.0.0"\ninfo: {title: Deep}\npaths: ' + "[" * depth + "]" * depth + "\n"


def deep_schema(depth: int = 300) -> str:
    """A schema nested `depth` objects deep (no refs): walkers must stop at their depth limits."""
    node: dict = {"type": "string"}
    for i in range(depth):
        node = {"type": "object", "properties": {f"f{i}": node}}
    ok = {"200": {"description": "ok", "content": {"application/json": {"schema": node}}}}
    return text(openapi({"/deep": {"post": {"operationId": "deep", "responses": ok,
                                            "requestBody": {"content": {"application/json": {"schema": node}}}}}}))


def ref_cycles() -> str:
    schemas = {"A": {"$ref": "#/components/schemas/B"}, "B": {"$ref": "#/components/schemas/A"},
               "Self": {"$ref": "#/components/schemas/Self"},
               "Loop": {"type": "object", "properties": {"next": {"$ref": "#/components/schemas/Loop"}},
                        "allOf": [{"$ref": "#/components/schemas/Loop"}]}}
    ok = {"200": {"description": "ok", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/A"}}}}}
    paths = {"/a": {"get": {"operationId": "a", "responses": ok,
                            "parameters": [{"$ref": "#/components/parameters/P"}]},
                    "post": {"operationId": "b", "requestBody": {"$ref": "#/components/requestBodies/R"},
                             "responses": {"200": {"$ref": "#/components/responses/X"}}}},
             "/loop": {"$ref": "#/paths/~1loop"}}
    components = {"schemas": schemas, "parameters": {"P": {"$ref": "#/components/parameters/P"}},
                  "requestBodies": {"R": {"$ref": "#/components/requestBodies/R"}},
                  "responses": {"X": {"$ref": "#/components/responses/Y"}, "Y": {"$ref": "#/components/responses/X"}}}
    return text(openapi(paths, components))


def huge_enum(count: int = 2_000_000) -> str:
    schema = {"type": "string", "enum": [f"v{i}" for i in range(count)]}
    return text(openapi({"/e": {"get": {"operationId": "e", "responses": {"200": {"description": "ok"}},
                                        "parameters": [{"name": "q", "in": "query", "schema": schema}]}}}))


def yaml_many_scalars(count: int = 296_000) -> str:
    """At least `count` parser events (4 per item), made of cheap YAML values (the most memory per byte)."""
    return 'openapi: "3.0.3"\ninfo: {title: Pad, version: "1"}\npaths: {}\nx-pad:\n' + "- {a: b}\n" * (count // 4 + 1)


def toml_many_values(count: int = 298_000) -> str:
    """At least `count` TOML tokens ('{' and '=' per inline table)."""
    head = 'service = "pad"\nname = "Pad"\ncredentialType = "noAuth"\npad = [\n'
    return head + "{a=1},\n" * (count // 2 + 1) + "]\n"


def json_many_values(count: int = 298_000) -> str:
    return '{"openapi": "3.0.3", "info": {"title": "Pad"}, "paths": {}, "x-pad": [' + ",".join(["{}"] * (count // 2 + 1)) + "]}"
