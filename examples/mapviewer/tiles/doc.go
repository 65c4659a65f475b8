// Package tiles describes a tile set: a large map cut into a grid of
// equally sized JPEG tiles, spread over node directories by a hash of the
// tile name, and the decode-and-scale step every loader shares.
//
// A tile set directory holds a manifest (tileset.json) and one directory
// per node (node00, node01, ...). Tile (c, r) is named
// "tile_rRR_cCC.jpg" and stored in the node directories given by
// Set.Holders: the first is chosen by an FNV-1a hash of the name, the
// replicas on the following nodes.
package tiles
