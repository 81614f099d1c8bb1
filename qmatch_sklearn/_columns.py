"""Columns named by a parameter (``feature_groups``, ``categorical_features``): by index or name."""


def name_positions(names):
    """``{name: position}`` of X's column names, or None when X has none."""
    return None if names is None else {name: j for j, name in enumerate(names)}


def column_position(column, positions, n_features, parameter):
    """The position in 0..n_features-1 of ``column``, an index (negative ones count
    from the end) or a name looked up in ``positions`` (:func:`name_positions`;
    None: X has no column names). Raises a ValueError that names ``parameter``
    for an unknown name or index."""
    if isinstance(column, str):
        if positions is None:
            raise ValueError(
                f"{parameter} names the column {column!r}, but X has no column names "
                "(pass a DataFrame, or column indices)."
            )
        if column not in positions:
            raise ValueError(
                f"{parameter} names the column {column!r}, which is not among X's columns."
            )
        return positions[column]
    j = int(column)
    if not -n_features <= j < n_features:
        raise ValueError(
            f"{parameter} has the column index {j}, but X has {n_features} columns."
        )
    return j % n_features
