
Blower_edge_hertzJ@R