"""Op groups placed as one unit: the rules that form them (:mod:`.rules`: TF colocation, Mirhoseini
§3.3 and §4.1, Placeto App. A.6) and the contraction of a graph by them and back (:mod:`.contract`)."""
