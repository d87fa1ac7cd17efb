"""bcolzx"""
