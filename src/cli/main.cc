// sluice: change data capture from MySQL and MariaDB. main() only hands over to cli/.
#include "cli/commands.h"

int main(int argc, char** argv) { return sluice::cli::Main(argc, argv); }
