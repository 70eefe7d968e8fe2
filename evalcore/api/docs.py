"""API reference pages: `/docs` is self-contained (no CDN), `/docs/swagger` is Swagger UI (loads a CDN)."""

from __future__ import annotations

import json
from html import escape
from typing import Any

from fastapi import APIRouter, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse

router = APIRouter(include_in_schema=False)

STYLE = ("body{font-family:sans-serif;max-width:60em;margin:auto;padding:1em;line-height:1.4}"
         "code,pre{background:#f4f4f4}pre{padding:.5em;overflow-x:auto}h3{margin-top:1.5em}"
         "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2em .5em;text-align:left}")


def _schema_name(schema: dict[str, Any]) -> str:
    """`#/components/schemas/SuiteIn` -> `SuiteIn`; a plain type otherwise."""
    if "$ref" in schema:
        return str(schema["$ref"]).rsplit("/", 1)[-1]
    if "anyOf" in schema:
        return " | ".join(_schema_name(s) for s in schema["anyOf"])
    return str(schema.get("type", "object"))


def _operation(method: str, path: str, op: dict[str, Any]) -> str:
    parts = [f"<h3 id='{escape(method + path)}'><code>{escape(method.upper())} {escape(path)}</code></h3>",
             f"<p>{escape(op.get('summary', ''))}. {escape(op.get('description', ''))}</p>"]
    rows = [f"<tr><td>{escape(p['name'])}</td><td>{escape(p['in'])}</td><td>{'yes' if p.get('required') else 'no'}"
            f"</td><td>{escape(_schema_name(p.get('schema', {})))}</td></tr>" for p in op.get("parameters", [])]
    if rows:
        parts.append("<table><tr><th>parameter</th><th>in</th><th>required</th><th>type</th></tr>"
                     + "".join(rows) + "</table>")
    body = op.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
    if body:
        parts.append(f"<p>JSON body: <a href='#{escape(_schema_name(body))}'>{escape(_schema_name(body))}</a></p>")
    answers = ", ".join(f"{escape(code)} {escape(r.get('description', ''))}"
                        for code, r in op.get("responses", {}).items())
    parts.append(f"<p>Answers: {answers}</p>")
    return "".join(parts)


def render(spec: dict[str, Any]) -> str:
    """The whole reference as one HTML page with no external asset."""
    operations = [_operation(m, path, op) for path, ops in spec["paths"].items() for m, op in ops.items()]
    schemas = [f"<h3 id='{escape(name)}'>{escape(name)}</h3><pre>{escape(json.dumps(schema, indent=2))}</pre>"
               for name, schema in spec.get("components", {}).get("schemas", {}).items()]
    info = spec["info"]
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{escape(info['title'])} API</title>"
            f"<style>{STYLE}</style></head><body><h1>{escape(info['title'])} {escape(info['version'])}</h1>"
            f"<pre>{escape(info.get('description', ''))}</pre><p>Machine-readable: <a href='/openapi.json'>"
            "/openapi.json</a>. Interactive: <a href='/docs/swagger'>/docs/swagger</a> (Swagger UI, loads its "
            "scripts from a CDN: needs internet in the browser).</p><h2>Endpoints</h2>" + "".join(operations)
            + "<h2>Schemas</h2>" + "".join(schemas) + "</body></html>")


@router.get("/docs")
def reference(request: Request) -> HTMLResponse:
    """The offline reference."""
    return HTMLResponse(render(request.app.openapi()))


@router.get("/docs/swagger")
def swagger(request: Request) -> HTMLResponse:
    """Swagger UI, for browsers with internet access."""
    return get_swagger_ui_html(openapi_url="/openapi.json", title=f"{request.app.title} - Swagger UI")
