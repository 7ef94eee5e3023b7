"""Chat templates (docs/security.md, "Chat templates"; issue 58). Each harmful template is written by the real writer
(gguf-py's GGUFWriter, transformers' save_pretrained in both of its layouts, plain JSON for chat_template.json), is
shown to hurt jinja2's plain Environment (rendering it writes a marker in the test's folder with the contents of a
canary file the test made) while ImmutableSandboxedEnvironment refuses it, and precdetect calls the model `unsafe`
with `template_code` naming the template and the offset. The benign twins, and real templates, stay `safe`."""

import gc
import json
import tempfile
import unittest
import warnings
from pathlib import Path

import gguf
import jinja2
import numpy as np
from jinja2.exceptions import SecurityError, UndefinedError
from jinja2.sandbox import ImmutableSandboxedEnvironment
from safetensors.numpy import save_file
from tokenizers import Tokenizer, models
from transformers import PreTrainedTokenizerFast

from helpers import run

CANARY = "canary: only the test wrote this"
MESSAGES = [{"role": "user", "content": "hi"}]
BENIGN = "{% for message in messages %}{{ '<|' ~ message['role'] ~ '|>' ~ message['content'] }}{% endfor %}"
# A real template, ChatML as chujiezheng/chat_templates writes it (tests/chat_templates/chujiezheng/chatml.jinja, MIT),
# inline: no test reads a file it did not write (the whole real corpus is the unit test's).
REAL = """{% if messages[0]['role'] == 'system' %}{% set offset = 1 %}{% else %}{% set offset = 0 %}{% endif %}
{{ bos_token }}{% for message in messages %}
{% if (message['role'] == 'user') != (loop.index0 % 2 == offset) %}
{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}
{{ '<|im_start|>' + message['role'] + '\n' + message['content'] | trim + '<|im_end|>\n' }}{% endfor %}
{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"""

# Each payload reads the canary and writes it to the marker through Python's builtins, reached from jinja2's
# `cycler` global: with the dunder names spelled (the shape of CVE-2024-34359's proof), through the attr filter
# with names assembled by `~`, and through subscripts whose keys a namespace and `set` assemble. With the
# construct precdetect reports first, and the text it is at.
PAYLOADS = {
    "dunders": ("{% set b = cycler.__init__.__globals__.__builtins__ %}"
                "{{ b.open(marker, 'w').write(b.open(canary).read()) }}",
                "attribute '__init__'", "__init__"),
    "attr-built": ("{% set g = cycler|attr('__in' ~ 'it__')|attr('__glo' ~ 'bals__') %}"
                   "{% set b = g['__built' ~ 'ins__'] %}{{ b['op' ~ 'en'](marker, 'w').write(b['op' ~ 'en'](canary).read()) }}",
                   "attr filter with a name built at render time", "'__in'"),
    "keys-set": ("{% set ns = namespace(i='__in' ~ 'it__') %}{% set g = '__glo' ~ 'bals__' %}"
                 "{% set b = cycler[ns.i][g]['__built' ~ 'ins__'] %}{{ b.open(marker, 'w').write(b.open(canary).read()) }}",
                 "item name built at render time", "ns.i]"),
}


def write_gguf(folder, templates):
    """model.gguf with one tensor and `templates` (a string, or gguf-py's list of {"name", "template"})."""
    writer = gguf.GGUFWriter(str(folder / "model.gguf"), "llama")
    writer.add_chat_template(templates)
    writer.add_tensor("token_embd.weight", np.ones((4, 4), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def write_tokenizer(folder, templates, jinja_files):
    """model.safetensors and a tokenizer saved by transformers: its templates in chat_template.jinja and
    additional_chat_templates/ (`jinja_files`, transformers' default), or in tokenizer_config.json."""
    save_file({"weight": np.ones((4, 4), dtype=np.float32)}, str(folder / "model.safetensors"))
    vocabulary = Tokenizer(models.WordLevel({"<unk>": 0, "hi": 1}, unk_token="<unk>"))
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=vocabulary, unk_token="<unk>")
    tokenizer.chat_template = templates
    tokenizer.save_pretrained(folder, save_jinja_files=jinja_files)


def write_processor_json(folder, template):
    """chat_template.json as transformers' processors save it, written as plain JSON."""
    save_file({"weight": np.ones((4, 4), dtype=np.float32)}, str(folder / "model.safetensors"))
    (folder / "chat_template.json").write_text(json.dumps({"chat_template": template}))


# How each writer lays a template named `name` out (None: the only one), and where precdetect names it.
WRITERS = {
    "gguf": (lambda folder, t: write_gguf(folder, t), "model.gguf!tokenizer.chat_template"),
    "gguf-named": (lambda folder, t: write_gguf(folder, [{"name": "default", "template": BENIGN},
                                                         {"name": "tool_use", "template": t}]),
                   "model.gguf!tokenizer.chat_template.tool_use"),
    "tokenizer-config": (lambda folder, t: write_tokenizer(folder, t, False), "tokenizer_config.json!chat_template"),
    "tokenizer-config-named": (lambda folder, t: write_tokenizer(folder, {"default": BENIGN, "tool_use": t}, False),
                               "tokenizer_config.json!chat_template.tool_use"),
    "chat-template-jinja": (lambda folder, t: write_tokenizer(folder, t, True), "chat_template.jinja"),
    "additional-chat-templates": (lambda folder, t: write_tokenizer(folder, {"default": BENIGN, "tool_use": t}, True),
                                  "additional_chat_templates/tool_use.jinja"),
    "chat-template-json": (lambda folder, t: write_processor_json(folder, t), "chat_template.json!chat_template"),
}


class ChatTemplates(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.temp = tempfile.TemporaryDirectory()
        cls.root = Path(cls.temp.name)
        cls.canary = cls.root / "canary.txt"
        cls.canary.write_text(CANARY)
        cls.marker = cls.root / "marker.txt"
        cls.folders = {}
        for writer, (write, _) in WRITERS.items():
            for case, template in [*((p, t) for p, (t, _, _) in PAYLOADS.items()), ("benign", BENIGN), ("real", REAL)]:
                folder = cls.root / f"{writer}--{case}"
                folder.mkdir()
                write(folder, template)
                cls.folders[writer, case] = folder
        result = run("--json", "-q", *cls.folders.values(), check_json=True)
        cls.models = {Path(model["input"]).name: model for model in result.document["models"]}

    @classmethod
    def tearDownClass(cls):
        cls.temp.cleanup()

    def render(self, environment, template):
        with warnings.catch_warnings():  # the payloads leave their files for the collector to close
            warnings.simplefilter("ignore", ResourceWarning)
            try:
                environment.from_string(template).render(messages=MESSAGES, marker=str(self.marker),
                                                         canary=str(self.canary))
            finally:
                gc.collect()

    def test_payloads_hurt_a_plain_environment_and_the_sandbox_refuses_them(self):
        for case, (template, _, _) in PAYLOADS.items():
            with self.subTest(case):
                self.render(jinja2.Environment(), template)
                self.assertEqual(self.marker.read_text(), CANARY)
                self.marker.unlink()
                with self.assertRaises((SecurityError, UndefinedError)):
                    self.render(ImmutableSandboxedEnvironment(), template)
                self.assertFalse(self.marker.exists())

    def test_each_payload_in_each_writers_layout_is_unsafe_where_it_is(self):
        for writer, (_, where) in WRITERS.items():
            for case, (template, construct, at) in PAYLOADS.items():
                with self.subTest(writer=writer, case=case):
                    folder = self.folders[writer, case]
                    safety = self.models[folder.name]["safety"]
                    self.assertEqual(safety["verdict"], "unsafe", safety)
                    first = safety["tampering"][0]
                    self.assertEqual(first["kind"], "template_code")
                    self.assertEqual(first["file"], str(folder / where))
                    offset = template.index(at)
                    self.assertEqual(first["offset"], offset)
                    name = "tool_use" if "tool_use" in where else "default"
                    self.assertTrue(first["detail"].startswith(f"{construct} at offset {offset} of template '{name}': "),
                                    first["detail"])
                    self.assertTrue(safety["says"].startswith("unsafe: template_code ("), safety["says"])

    def test_benign_and_real_templates_are_safe(self):
        for writer in WRITERS:
            for case in ("benign", "real"):
                with self.subTest(writer=writer, case=case):
                    safety = self.models[self.folders[writer, case].name]["safety"]
                    self.assertEqual((safety["verdict"], safety["tampering"], safety["unverified"]), ("safe", [], []))

    def test_a_template_precdetect_cannot_parse_is_unverified(self):
        with tempfile.TemporaryDirectory() as temp:
            folder = Path(temp)
            write_processor_json(folder, "{% for message in messages %}{{ message.content }")
            safety = run("--json", "-q", folder, check_json=True).document["models"][0]["safety"]
            self.assertEqual(safety["verdict"], "unverified")
            self.assertIn("chat_template.json!chat_template: a chat template that precdetect cannot parse as Jinja2 "
                          "(unexpected '}' at offset 48)", safety["unverified"][0])


if __name__ == "__main__":
    unittest.main()
