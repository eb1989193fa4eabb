"""Which layers a recall leaves out: a list that weighs 0 in score fusion and that nothing else reads."""

from __future__ import annotations

from hindsight.mcp_edge.domain import ALL_LAYERS, LayerName
from hindsight.mcp_edge.recall_layers import unweighed_layers
from hindsight.mcp_edge.settings import EdgeSettings

WORKING, EPISODIC = LayerName.WORKING, LayerName.EPISODIC


def test_working_memory_weighs_0_by_default_and_is_not_asked() -> None:
    assert unweighed_layers(EdgeSettings(), ALL_LAYERS, entity_channel=True) == {WORKING}
    assert unweighed_layers(EdgeSettings(), (WORKING, EPISODIC), entity_channel=False) == {WORKING}


def test_a_recall_that_names_only_weightless_layers_asks_them() -> None:
    assert unweighed_layers(EdgeSettings(), (WORKING,), entity_channel=False) == frozenset()
    no_keyword = EdgeSettings(fusion_weights="working=0,episodic=0")
    assert unweighed_layers(no_keyword, (WORKING, EPISODIC), entity_channel=False) == frozenset()


def test_every_layer_is_asked_when_weighted_with_rrf_or_when_the_setting_says_so() -> None:
    for settings in (
        EdgeSettings(fusion_weights="working=0.5"),
        EdgeSettings(fusion="rrf"),
        EdgeSettings(ask_unweighted=True),
    ):
        assert unweighed_layers(settings, ALL_LAYERS, entity_channel=False) == frozenset(), settings


def test_layers_whose_list_is_read_beyond_fusion_are_asked_whatever_they_weigh() -> None:
    nothing = EdgeSettings(fusion_weights="working=0,episodic=0,semantic=0,reflect=0")
    # semantic: entities named, validity, similarity; reflect: lessons lead on their own relevance
    assert unweighed_layers(nothing, ALL_LAYERS, entity_channel=False) == {WORKING, EPISODIC}
    # the entity channel picks from episodic memory's hits
    assert unweighed_layers(nothing, ALL_LAYERS, entity_channel=True) == {WORKING}
    # a keyword signal of 0 makes every keyword list weigh 0: the same rule applies
    no_keyword = EdgeSettings(signal_weights="vector=1,keyword=0,tags=0.2")
    assert unweighed_layers(no_keyword, ALL_LAYERS, entity_channel=False) == {WORKING, EPISODIC}
