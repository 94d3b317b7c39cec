#!/usr/bin/env python3
"""deploy/iron-builder against tests/fakes/iron_stub: a real subprocess
speaking irontune's builder protocol to a stub IRON.

Run: python3 tests/builder/iron_builder_test.py (ctest: iron_builder).
"""

import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ADAPTER = os.path.join(ROOT, "deploy", "iron-builder")
STUB = os.path.join(ROOT, "tests", "fakes", "iron_stub")


def request(out_dir, packaging="full_elf", generation="npu2", steps=1,
            distinct=True, tunables=None, values=True, cls="GEMM"):
    buffers = [
        {"name": "A", "role": "in", "dtype": "bf16", "shape": [256, 512],
         "fills": True, "drains": False},
        {"name": "B", "role": "in", "dtype": "bf16", "shape": [512, 1024],
         "fills": True, "drains": False},
        {"name": "C", "role": "out", "dtype": "bf16", "shape": [256, 1024],
         "fills": False, "drains": True},
    ]
    return {
        "protocol": 1, "recipe_hash": "ab" * 32,
        "operator": {
            "class": cls, "params": {"M": 256, "K": 512, "N": 1024},
            "tunables": tunables or {"tile_m": 64, "tile_k": 64, "tile_n": 64,
                                     "num_aie_columns": 8},
            "buffers": buffers,
            # seq_len a core reads, base a DMA address; rows has no word.
            "values": [{"name": "seq_len", "symbol": "seq_len", "bounds": "M"},
                       {"name": "base", "symbol": "other", "bounds": ""},
                       {"name": "rows", "symbol": "rows", "bounds": "M"}]
            if values else []},
        "device": {"platform": "NPU Strix", "generation": generation,
                   "columns": 8},
        "packaging": packaging, "steps": steps, "distinct": distinct,
        "output_dir": out_dir,
    }


class IronBuilderTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="iron-builder-test-")
        self.log = os.path.join(self.dir, "compiles.log")
        self.env = dict(os.environ, PYTHONPATH=STUB, IRON_STUB_LOG=self.log)
        for name in ("IRON_STUB_FAIL", "IRON_STUB_UNPLACEABLE", "IRON_STUB_HIDE",
                     "IRON_STUB_FEEDBACK", "IRON_STUB_OLD_SIZES"):
            self.env.pop(name, None)

    def run_adapter(self, req, *args):
        done = subprocess.run([sys.executable, ADAPTER, *args],
                              input=json.dumps(req) if req else "",
                              capture_output=True, text=True, env=self.env,
                              timeout=60)
        return done

    def reply(self, req):
        done = self.run_adapter(req)
        self.assertEqual(done.returncode, 0, done.stderr)
        return json.loads(done.stdout)

    def compiles(self):
        if not os.path.exists(self.log):
            return []
        with open(self.log) as f:
            return [json.loads(line) for line in f]

    def test_version_names_the_adapter(self):
        done = self.run_adapter(None, "--version")
        self.assertEqual(done.returncode, 0)
        self.assertTrue(done.stdout.startswith("iron-builder 1 (IRON "))
        # It names where its IRON API is listed, not a commit.
        self.assertIn("docs/builder-protocol.md", done.stdout)
        self.assertIsNone(re.search(r"[0-9a-f]{12}", done.stdout))
        self.assertIn("fit-check", done.stdout.splitlines()[1:])

    def test_a_fit_check_answers_without_compiling(self):
        req = request(self.dir)
        del req["output_dir"]
        req["check"] = "fit"
        self.assertEqual(self.reply(req),
                         {"protocol": 1, "status": "fits", "reason": ""})
        bad = dict(req, operator=dict(req["operator"], tunables={"tile_k": 48}))
        r = self.reply(bad)
        self.assertEqual(r["status"], "refused")
        self.assertEqual(r["reason"], "GEMM: K (512) must be a multiple of 48")
        self.env["IRON_STUB_UNPLACEABLE"] = "1"
        r = self.reply(req)
        self.assertEqual(r["status"], "refused")
        self.assertIn("placer", r["reason"])
        self.assertEqual(self.compiles(), [])
        self.assertEqual(os.listdir(self.dir), [])

    def test_full_elf_build(self):
        r = self.reply(request(self.dir, steps=2))
        self.assertEqual(r["status"], "built", r)
        self.assertEqual(r["recipe_hash"], "ab" * 32)
        self.assertEqual(r["packaging"], "full_elf")
        self.assertEqual(r["files"], {"elf": "design.elf"})
        with open(os.path.join(self.dir, "design.elf"), "rb") as f:
            self.assertTrue(f.read().startswith(b"\x7fELF"))
        self.assertEqual(len(r["artifact_hash"]), 64)
        self.assertEqual([b["name"] for b in r["buffers"]],
                         ["s0.A", "s0.B", "s0.C", "s1.A", "s1.B", "s1.C"])
        self.assertEqual(r["buffers"][2]["nbytes"], 256 * 1024 * 2)
        self.assertTrue(r["buffers"][2]["drains"])
        [c] = self.compiles()
        self.assertEqual(c["packaging"], "FullELF")
        self.assertTrue(c["reconfigure"])
        self.assertEqual(c["steps"], [["s0.A", "s0.B", "s0.C"],
                                      ["s1.A", "s1.B", "s1.C"]])
        self.assertEqual(c["inputs"], ["s0.A", "s0.B", "s1.A", "s1.B"])
        self.assertEqual(c["outputs"], ["s0.C", "s1.C"])

    def test_full_elf_buffers_are_views_in_iron_arenas(self):
        r = self.reply(request(self.dir, steps=2))
        self.assertEqual(r["status"], "built", r)
        a, b, c = 256 * 512 * 2, 512 * 1024 * 2, 256 * 1024 * 2
        # Kernel-argument order; the inputs and the outputs back to back.
        self.assertEqual(r["arenas"], [{"name": "input", "nbytes": 2 * (a + b)},
                                       {"name": "output", "nbytes": 2 * c},
                                       {"name": "scratch", "nbytes": 0}])
        at = {x["name"]: (x["arena"], x["offset"]) for x in r["buffers"]}
        self.assertEqual(at, {"s0.A": ("input", 0), "s0.B": ("input", a),
                              "s1.A": ("input", a + b), "s1.B": ("input", 2 * a + b),
                              "s0.C": ("output", 0), "s1.C": ("output", c)})

    def test_per_call_values_keep_their_kind(self):
        r = self.reply(request(self.dir))
        self.assertEqual(r["status"], "built", r)
        # Each value the table holds, with its kind; never a kernel argument.
        self.assertEqual(r["symbols"],
                         [{"name": "seq_len", "scratchpad_word": 5, "kind": "core"},
                          {"name": "other", "scratchpad_word": 6, "kind": "addr"}])
        self.assertFalse(any("arg" in s for s in r["symbols"]))

    def test_a_declared_feedback_arena_is_the_fourth(self):
        self.env["IRON_STUB_FEEDBACK"] = "4096"
        r = self.reply(request(self.dir))
        self.assertEqual(r["status"], "built", r)
        self.assertEqual([(a["name"], a["nbytes"]) for a in r["arenas"][2:]],
                         [("scratch", 0), ("feedback", 4096)])

    def test_shared_buffers_when_not_distinct(self):
        r = self.reply(request(self.dir, steps=3, distinct=False))
        self.assertEqual(r["status"], "built", r)
        self.assertEqual(len(r["buffers"]), 3)
        self.assertEqual(r["arenas"][0]["nbytes"], 256 * 512 * 2 + 512 * 1024 * 2)
        [c] = self.compiles()
        self.assertEqual(c["steps"], [["s0.A", "s0.B", "s0.C"]] * 3)
        self.assertEqual(c["inputs"], ["s0.A", "s0.B"])

    def test_xclbin_chain_build(self):
        r = self.reply(request(self.dir, packaging="xclbin_chain",
                               values=False))
        self.assertEqual(r["status"], "built", r)
        [c] = self.compiles()
        self.assertEqual(c["packaging"], "PerStep")
        # The kernel as IRON's chain names it: f<sha1 of the image name>_op0.
        kernel = f"f{hashlib.sha1(c['name'].encode()).hexdigest()[:6]}_op0"
        self.assertEqual(r["files"], {"xclbin": "design.xclbin",
                                      "kernel": kernel,
                                      "insts": "insts.bin"})
        self.assertEqual(os.path.getsize(os.path.join(self.dir, "insts.bin")) % 4, 0)
        self.assertEqual(r["symbols"], [])
        self.assertNotIn("arenas", r)
        self.assertTrue(all("arena" not in b for b in r["buffers"]))

    def test_an_older_iron_fails_naming_what_it_lacks(self):
        self.env["IRON_STUB_HIDE"] = "iron.tune.measure.Image"
        r = self.reply(request(self.dir))
        self.assertEqual(r["status"], "failed")
        self.assertIn("iron.tune.measure has no Image", r["reason"])
        self.env["IRON_STUB_HIDE"] = "iron.tune.autotune.refusal"
        fit = dict(request(self.dir), check="fit")
        self.assertIn("iron.tune.autotune has no refusal", self.reply(fit)["reason"])
        # IRON before ArgumentSizes gave its arenas as a bare tuple.
        self.env.pop("IRON_STUB_HIDE")
        self.env["IRON_STUB_OLD_SIZES"] = "1"
        r = self.reply(request(self.dir))
        self.assertEqual(r["status"], "failed")
        self.assertIn("tuple has no arguments", r["reason"])
        self.assertIn("ArgumentSizes", r["reason"])

    def test_xclbin_chain_with_values_is_refused_before_compiling(self):
        r = self.reply(request(self.dir, packaging="xclbin_chain"))
        self.assertEqual(r["status"], "refused")
        self.assertIn("seq_len", r["reason"])
        self.assertEqual(self.compiles(), [])

    def test_a_setting_iron_rejects_is_refused(self):
        r = self.reply(request(self.dir, tunables={"tile_k": 48}))
        self.assertEqual(r["status"], "refused")
        self.assertEqual(r["reason"], "GEMM: K (512) must be a multiple of 48")
        r = self.reply(request(self.dir, tunables={"tile_n": 256,
                                                   "num_aie_columns": 8}))
        self.assertEqual(r["status"], "refused")
        self.assertIn("N (1024) must be a multiple of 2048", r["reason"])

    def test_unknown_class_and_npu1_full_elf_are_refused(self):
        r = self.reply(request(self.dir, cls="NoSuchOp"))
        self.assertEqual(r["status"], "refused")
        self.assertIn("'NoSuchOp' is not an operator class of irontune's "
                      "catalogue", r["reason"])
        # In the catalogue, not in this IRON (the stub has four classes).
        r = self.reply(request(self.dir, cls="Softmax"))
        self.assertEqual(r["status"], "refused")
        self.assertEqual(r["reason"], "IRON has no operator class 'Softmax'")
        r = self.reply(request(self.dir, generation="npu1"))
        self.assertEqual(r["status"], "refused")
        self.assertIn("npu1 has no full-ELF", r["reason"])

    def test_only_catalogue_classes_are_looked_up(self):
        # Names iron.operators holds that are not operator classes: its base
        # class, what it imports, a module; each refused, none called.
        for name in ("_Elementwise", "Operator", "Unresolvable", "dataclasses",
                     "__class__", "__builtins__", 7, ["GEMM"]):
            with self.subTest(name=name):
                r = self.reply(request(self.dir, cls=name))
                self.assertEqual(r["status"], "refused", r)
                self.assertIn("is not an operator class of irontune's "
                              "catalogue", r["reason"])
        self.assertEqual(self.compiles(), [])
        fit = dict(request(self.dir, cls="Operator"), check="fit")
        self.assertEqual(self.reply(fit)["status"], "refused")

    def test_a_compile_failure_fails_with_the_traceback_on_stderr(self):
        self.env["IRON_STUB_FAIL"] = "1"
        done = self.run_adapter(request(self.dir))
        self.assertEqual(done.returncode, 0)
        r = json.loads(done.stdout)  # IRON's stdout chatter kept off it
        self.assertEqual(r["status"], "failed")
        self.assertEqual(r["reason"],
                         "RuntimeError: aiecc: error: could not route the design")
        self.assertIn("Traceback", done.stderr)
        self.assertIn("aiecc: compiling", done.stderr)

    def test_another_protocol_fails(self):
        req = request(self.dir)
        req["protocol"] = 2
        self.assertEqual(self.reply(req)["status"], "failed")

    def test_a_request_that_is_not_json_exits_2(self):
        done = subprocess.run([sys.executable, ADAPTER], input="nope",
                              capture_output=True, text=True, env=self.env,
                              timeout=60)
        self.assertEqual(done.returncode, 2)
        self.assertIn("not JSON", done.stderr)


if __name__ == "__main__":
    unittest.main()
