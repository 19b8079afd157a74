"""measure/serve_chart.py's chart of a busy server: its points' labels (their numbers of users) never share a place
(issue 64, item 12: the shipped recording drew "44", "88" and one "2" over another), and a point whose label gave way
lies beside the point that carries it."""

from specviz.measure import closed_loop, serve_chart

PLOT_WIDTH = 700  # px: the plot's width at its narrowest on a desk page (the figure's width follows the page's)


def recorded_figure():
    table = closed_loop.lines(serve_chart.recorded_serve()["runs"])
    return table, serve_chart.serve_figure(table, "a machine")


def label_boxes(figure, every: bool = False) -> list[tuple[str, float, float, float, float]]:
    """Each label's box (text, left, top, right, bottom) in pixels of the plot, as plotly sets "top center" text:
    centred above its marker; both axes start at 0 (rangemode tozero). `every`: each point's own label, as before."""
    layout = figure.layout
    height = layout.height - layout.margin.t - layout.margin.b
    wide = max(x for trace in figure.data for x in trace.x)
    tall = max(y for trace in figure.data for y in trace.y)
    boxes = []
    for trace in figure.data:
        assert trace.textposition == "top center"
        font = trace.textfont.size
        users_of = trace.text if trace.customdata is None else trace.customdata  # (before issue 64: the text)
        for x, y, text, users in zip(trace.x, trace.y, trace.text, users_of):
            text = str(users) if every else text
            if text:
                cx = x / wide * PLOT_WIDTH
                cy = height - y / tall * height - (trace.marker.size + font) / 2
                w, h = 0.6 * font * len(text), font
                boxes.append((text, cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2))
    return boxes


def overlapping(boxes) -> list[tuple[str, str]]:
    return [(a[0], b[0]) for i, a in enumerate(boxes) for b in boxes[i + 1:]
            if a[1] < b[3] and b[1] < a[3] and a[2] < b[4] and b[2] < a[4]]


def test_no_two_point_labels_share_a_place():
    _, figure = recorded_figure()
    boxes = label_boxes(figure)
    assert not overlapping(boxes), overlapping(boxes)
    assert overlapping(label_boxes(figure, every=True)), "every point labelled: the labels must have met"  # control


def test_a_label_that_gave_way_is_carried_by_a_near_point_of_the_same_number():
    table, figure = recorded_figure()
    labels = serve_chart.point_labels(table)
    wide = max(m.aggregate.median for m in table)
    tall = max(m.per_user.median for m in table)
    hidden = [m for m in table if not labels[m.rule, m.users]]
    assert hidden, "no label gave way: nothing was checked"
    for m in hidden:
        assert any(labels[o.rule, o.users] == str(m.users)
                   and abs(o.aggregate.median - m.aggregate.median) < serve_chart.NEAR * wide
                   and abs(o.per_user.median - m.per_user.median) < serve_chart.NEAR * tall for o in table), m
    hover = {trace.hovertemplate for trace in figure.data}
    assert hover == {"%{customdata} users: %{x:.1f} tokens/s in all, %{y:.1f} each<extra></extra>"}
