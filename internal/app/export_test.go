package app

// AtShutdown is atShutdown, for the tests of package app_test.
var AtShutdown = atShutdown
