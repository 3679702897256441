
BoutputJ<OOOXXXO444OOOXXXO]]]44‚O‚‚X{{{ÀÇ  ÀÇÇÇÀÀÀÇ«««ÇÇÇŞŞŞÇ