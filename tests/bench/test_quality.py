import numpy as np

from signet_bench.bench.quality import (
    ABLATIONS,
    ablate_samples,
    ablation_persona,
    shared_stack,
)
from signet_bench.bench.train import synthetic_samples
from signet_bench.synth.persona import get_persona


def test_shared_stack_puts_every_project_on_the_first_projects_topics():
    base = get_persona("multi-project").projects
    shared = shared_stack("multi-project")
    assert [p.name for p in shared] == [p.name for p in base]
    assert len({tuple(t.name for t in p.topics) for p in base}) > 1
    assert {tuple(t.name for t in p.topics) for p in shared} == {
        tuple(t.name for t in base[0].topics)
    }
    assert [p.schedule for p in shared] == [p.schedule for p in base]


def test_each_ablation_runs_on_a_persona_that_plants_its_pattern():
    assert set(ABLATIONS) == {"project", "time", "superseded"}
    label, persona = ablation_persona("project")
    assert label == "multi-project+project"
    assert len({p.topics for p in persona.projects}) == 1
    _, persona = ablation_persona("time")
    assert persona.time_pattern_share > get_persona("heavy").time_pattern_share
    _, persona = ablation_persona("superseded")
    assert persona.supersede_share > get_persona("heavy").supersede_share
    assert dict(persona.supersede_modes) == {"attribute": 1.0}


def test_ablated_samples_lose_exactly_their_group():
    samples = synthetic_samples(3, dim=16)
    assert any(s.project_slot != 0 for s in samples)
    assert all(s.project_slot == 0 for s in ablate_samples(samples, "project"))
    for s, a in zip(samples, ablate_samples(samples, "time"), strict=True):
        assert not a.features[:, 3:10].any()
        np.testing.assert_array_equal(
            np.delete(a.features, range(3, 10), 1), np.delete(s.features, range(3, 10), 1)
        )
    for s, a in zip(samples, ablate_samples(samples, "superseded"), strict=True):
        assert not a.features[:, 11].any()
        np.testing.assert_array_equal(np.delete(a.features, 11, 1), np.delete(s.features, 11, 1))
    assert ablate_samples(samples, None) is samples
