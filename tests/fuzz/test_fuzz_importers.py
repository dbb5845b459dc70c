"""Fuzz every graph importer through the CLI (issue 18): a mutated file of any format gives a
valid graph, or exit 2 with one line — never exit 1, a crash or a hang (see ``harness.py``).

Sized for about a minute of CI on two cores; ``benchmarks/fuzz_soak.py`` runs the same cases
for as long as asked.
"""

from __future__ import annotations

import pytest
from harness import MUTATION_KINDS, TEXT_SEEDS, Worker, file_name, make_tf_seeds, mutate
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_profiles import profile_settings

#: Examples per format (TensorFlow and Keras cases cost more: each imports a graph into TensorFlow).
EXAMPLES = {"placelab": 60, "node-link": 60, "graphml": 60, "doppler-text": 60, "dnn-partitioning": 60,
            "tf-graphdef": 40, "tf-savedmodel": 40, "keras": 30, "onnx": 40}

MUTATIONS = st.lists(
    st.tuples(st.sampled_from(MUTATION_KINDS), st.floats(0, 1, exclude_max=True), st.floats(0, 1, exclude_max=True),
              st.binary(max_size=24)),
    min_size=1, max_size=4)


@pytest.fixture(scope="module")
def worker():
    w = Worker(timeout_s=300)  # a hang detector: generous, a busy machine is slow, not hung (issue 34)
    yield w
    w.close()


@pytest.fixture(scope="module")
def seeds(tmp_path_factory):
    out = dict(TEXT_SEEDS)
    pytest.importorskip("tensorflow")
    out.update(make_tf_seeds(tmp_path_factory.mktemp("tf-seeds")))
    return out


@pytest.mark.parametrize("fmt", list(EXAMPLES))
def test_seed_is_a_valid_graph(worker, seeds, fmt):
    verdict = worker.run(seeds[fmt], file_name(fmt))
    assert verdict.kind == "ok", verdict.detail


@pytest.mark.hypothesis  # a property test inside: make fuzz (-m hypothesis) selects it
@pytest.mark.parametrize("fmt", list(EXAMPLES))
def test_mutated_files_are_a_graph_or_one_line(worker, seeds, fmt):
    @settings(profile_settings(settings(max_examples=EXAMPLES[fmt], suppress_health_check=list(HealthCheck))))
    @given(ops=MUTATIONS)
    def case(ops):
        verdict = worker.run(mutate(seeds[fmt], ops), file_name(fmt))
        assert verdict.kind != "failure", f"{fmt} {ops}: {verdict.detail}"

    case()


def test_the_judge_catches_every_failure_kind(worker):
    from harness import judge

    assert judge(0, '{"ops": 3}\n', "").kind == "ok"
    assert judge(2, "", "error: x.json is not valid JSON\n").kind == "bad input"
    assert judge(1, "", "internal error: KeyError: 'a'\n").kind == "failure"
    assert judge(2, "", "error: one\nerror: two\n").kind == "failure"
    assert judge(2, "", "Traceback (most recent call last):\n").kind == "failure"
    assert judge(0, '{"ops": 3}\n', "RuntimeWarning: overflow\n").kind == "failure"
    assert judge(0, '{"ops": 3}\n', "warning: overflow encountered in multiply\n").kind == "failure"
    glued = "warning: g: line 4: entry '16,6' has no blank after its comma, unlike the line's other entries: ...\n"
    assert judge(0, '{"ops": 3}\n', glued).kind == "ok"
    assert judge(-11, "", "").kind == "failure"
