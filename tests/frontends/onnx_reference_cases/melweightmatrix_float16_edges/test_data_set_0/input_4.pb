
Bupper_edge_hertzJâl