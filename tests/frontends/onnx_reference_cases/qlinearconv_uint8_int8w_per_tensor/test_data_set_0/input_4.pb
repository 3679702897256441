Bw_scaleJ
×#<