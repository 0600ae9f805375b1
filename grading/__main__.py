import sys

from grading.cli.rubric import main

sys.exit(main())
