"""A figure beside its anchor (a target, or a peer's figure) and the ratio between them."""

from bench.common import record


def record_against(
    scenario: str,
    figure: str,
    value: float,
    unit: str,
    *,
    anchor: float,
    anchor_label: str,
    lower_is_better: bool = False,
    goal: bool = True,
    **extra: object,
) -> bool:
    """Record `value`, then print the anchor and value/anchor, and whether it is met when the
    anchor is a goal (not a peer's figure); returns whether it is met."""
    ratio = value / anchor if anchor else float("inf")
    met = value <= anchor if lower_is_better else value >= anchor
    record(
        scenario,
        figure,
        value,
        unit,
        anchor=anchor,
        anchor_label=anchor_label,
        ratio=ratio,
        met=met,
        **extra,
    )
    shown = f"{anchor:,.0f}" if abs(anchor) >= 100 else f"{anchor:,.3f}"
    verdict = ("met" if met else "MISSED") if goal else ""
    label = f"  anchor: {anchor_label}"
    print(f"  {'':<11} {label:<44} {shown:>12} {unit}  ratio {ratio:.2f}  {verdict}".rstrip())
    return met
