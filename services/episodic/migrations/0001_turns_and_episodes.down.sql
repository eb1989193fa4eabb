-- Undoes 0001: the layer's tables go, and everything in them.
DROP TABLE IF EXISTS episodes;
DROP TABLE IF EXISTS turns;
