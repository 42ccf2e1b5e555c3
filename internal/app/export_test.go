package app

// AtShutdown is atShutdown, for the tests of package app_test.
var AtShutdown = atShutdown

// EvictionReport is evictionReport, for the tests of package app_test.
var EvictionReport = evictionReport
