"""Renders a chat template as transformers' apply_chat_template does, for the tools-format tests.

An independent renderer: Python's jinja2 with the environment transformers builds (sandboxed,
trim_blocks, lstrip_blocks, loop controls, its tojson filter and raise_exception), not the
JavaScript renderer the runtime uses. Reads one JSON object on stdin: template, messages, tools,
add_generation_prompt, enable_thinking and kwargs (apply_chat_template's other keyword arguments,
bos_token among them); prints the rendering.
"""
import json
import sys

from jinja2.exceptions import TemplateError
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment


def raise_exception(message):
    raise TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def main():
    job = json.load(sys.stdin)
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    template = env.from_string(job["template"])
    kwargs = dict(job.get("kwargs", {}))
    if "enable_thinking" in job:
        kwargs["enable_thinking"] = job["enable_thinking"]
    sys.stdout.write(
        template.render(
            messages=job["messages"],
            tools=job.get("tools"),
            add_generation_prompt=job["add_generation_prompt"],
            **kwargs,
        )
    )


main()
