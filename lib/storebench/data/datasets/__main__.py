from storebench.data.datasets.sources import main

main()
